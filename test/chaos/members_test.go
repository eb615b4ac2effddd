package chaos

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// memberLatency is the one-way latency of the slow member: a probe on an
// open connection takes two of it, well within the 5 s probe timeout, so
// the member stays Ready and nothing fails over.
const memberLatency = time.Second

// slowMember routes the host's traffic to member-2 through a proxy that
// adds latency: member-1 and member-3 get a change promptly while member-2
// lags, and member-2 catches up once the latency is gone.
func slowMember(t *testing.T, e *chaosEnv) {
	const slow = "member-2"
	before := e.observe(t)
	mc := e.memberCluster(t, slow)
	orig := mc.Spec.APIEndpoint
	u, err := url.Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, u.Host)
	e.setEndpoint(t, slow, "https://"+proxy.Addr())
	t.Cleanup(func() { e.setEndpoint(t, slow, orig) })
	testenv.Eventually(t, time.Minute, slow+" reached through the proxy", func(ctx context.Context) error {
		if n := proxy.Accepted(); n == 0 {
			return fmt.Errorf("no connection through the proxy yet")
		}
		return e.ready(ctx, slow)
	})

	proxy.SetDelay(memberLatency)
	e.change(t, "slow")
	took := e.waitRev(t, "slow", 2*time.Minute, members, nil)
	t.Logf("with %s of latency to %s, the change reached: %v", memberLatency, slow, took)
	for _, m := range members {
		if m != slow && took[m] > 20*time.Second {
			t.Errorf("%s got the change after %s: held back by the slow %s", m, took[m], slow)
		}
	}
	if err := e.ready(context.Background(), slow); err != nil {
		t.Errorf("%s is not Ready with %s of latency: %v", slow, memberLatency, err)
	}
	e.waitHostSettled(t, 2*time.Minute)

	proxy.SetDelay(0)
	e.setEndpoint(t, slow, orig)
	testenv.Eventually(t, time.Minute, slow+" Ready at its own endpoint", func(ctx context.Context) error { return e.ready(ctx, slow) })
	e.nothingLost(t, before)
	e.converges(t, "after-slow-member")
	e.nothingLost(t, before)
}

// rejectingMember makes member-3 refuse writes to the federated
// ConfigMaps (a ValidatingAdmissionPolicy): member-1 and member-2 get a
// change, member-3 gets the Deployments' part of it, the host reports the
// refusal on the ConfigMaps without retrying in a hot loop, and nothing is
// deleted; once the policy goes, member-3 catches up.
func rejectingMember(t *testing.T, e *chaosEnv) {
	const rejecting = "member-3"
	const message = "chaos: " + rejecting + " refuses writes to federated ConfigMaps"
	before := e.observe(t)
	adm := e.typed[rejecting].AdmissionregistrationV1()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos-reject"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "managed", Expression: fmt.Sprintf("has(object.metadata.labels) && '%s' in object.metadata.labels", v1alpha1.LabelManaged),
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message, Reason: ptr.To(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos-reject"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	if _, err := adm.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		for _, err := range []error{
			adm.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}),
			adm.ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("remove the admission policy from %s: %v", rejecting, err)
			}
		}
		removed = true
	}
	t.Cleanup(func() {
		if !removed {
			remove()
		}
	})
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy is in force once a dry-run write of a copy is refused.
	testenv.Eventually(t, time.Minute, rejecting+" refuses writes to the ConfigMap copies", func(ctx context.Context) error {
		patch := []byte(`{"metadata":{"annotations":{"chaos.flotilla.io/probe":"x"}}}`)
		_, err := e.typed[rejecting].CoreV1().ConfigMaps(ns).Patch(ctx, cmName(0), types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), message) {
			return fmt.Errorf("dry-run write: %v", err)
		}
		return nil
	})

	e.change(t, "rejected")
	took := e.waitRev(t, "rejected", 2*time.Minute, members, map[string]string{rejecting: "ConfigMap"})
	t.Logf("the change reached the members that accept it: %v", took)
	testenv.Eventually(t, time.Minute, "every ConfigMap reports ApplyFailed for "+rejecting, func(ctx context.Context) error {
		fos := &v1alpha1.FederatedObjectList{}
		if err := e.host.List(ctx, fos, client.InNamespace(ns)); err != nil {
			return err
		}
		failed := 0
		for _, fo := range fos.Items {
			for _, c := range fo.Status.Clusters {
				switch {
				case fo.Spec.Template.Kind != "ConfigMap":
				case c.Cluster == rejecting && c.Reason == v1alpha1.PropagationApplyFailed && strings.Contains(c.Message, message):
					failed++
				case c.Cluster != rejecting && c.Reason != v1alpha1.PropagationOK:
					return fmt.Errorf("%s: %s %s: %s", fo.Name, c.Cluster, c.Reason, c.Message)
				}
			}
			if fo.Spec.Template.Kind == "ConfigMap" && meta.IsStatusConditionTrue(fo.Status.Conditions, v1alpha1.ConditionPropagated) {
				return fmt.Errorf("%s is Propagated while %s refuses it", fo.Name, rejecting)
			}
		}
		if failed != workloads {
			return fmt.Errorf("%d of %d ConfigMaps report ApplyFailed with the member's message", failed, workloads)
		}
		return nil
	})
	evs, err := e.typed[localenv.HostName].CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + cmName(0) + ",reason=" + string(v1alpha1.PropagationApplyFailed)})
	if err != nil {
		t.Fatal(err)
	}
	// Earlier scenarios may have left other ApplyFailed events on it.
	found := false
	for _, ev := range evs.Items {
		if strings.Contains(ev.Message, "cluster "+rejecting+":") && strings.Contains(ev.Message, message) {
			t.Logf("event on the host ConfigMap: %s %s %s", ev.Type, ev.Reason, ev.Message)
			found = true
			break
		}
	}
	if !found {
		t.Errorf("no ApplyFailed event naming %s and its message on ConfigMap %s among %d", rejecting, cmName(0), len(evs.Items))
		for _, ev := range evs.Items {
			t.Logf("event: %s %s", ev.Reason, ev.Message)
		}
	}

	// No hot loop: the refused writes are retried with a pause.
	writes := func() int {
		return e.memberRequests(t, rejecting, "APPLY", "configmaps") + e.memberRequests(t, rejecting, "PATCH", "configmaps") +
			e.memberRequests(t, rejecting, "PUT", "configmaps") + e.memberRequests(t, rejecting, "POST", "configmaps")
	}
	const window = 20 * time.Second
	w0 := writes()
	time.Sleep(window) // the measurement window
	retried := writes() - w0
	t.Logf("writes to %s's ConfigMaps in %s while it refuses them: %d for %d ConfigMaps", rejecting, window, retried, workloads)
	if limit := 3 * workloads; retried > limit {
		t.Errorf("%d writes to %s's ConfigMaps in %s, want at most %d (%d ConfigMaps, retried every 15 s): a hot loop", retried, rejecting, window, limit, workloads)
	}

	remove()
	e.waitRev(t, "rejected", 2*time.Minute, members, nil)
	e.waitHostSettled(t, 2*time.Minute)
	e.nothingLost(t, before)
	e.converges(t, "after-rejecting-member")
	e.nothingLost(t, before)
}

func (e *chaosEnv) memberCluster(t *testing.T, name string) *v1alpha1.MemberCluster {
	t.Helper()
	mc := &v1alpha1.MemberCluster{}
	if err := e.host.Get(context.Background(), types.NamespacedName{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

// setEndpoint points a MemberCluster at another apiserver address.
func (e *chaosEnv) setEndpoint(t *testing.T, name, endpoint string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := e.memberCluster(t, name)
		if mc.Spec.APIEndpoint == endpoint {
			return nil
		}
		mc.Spec.APIEndpoint = endpoint
		return e.host.Update(context.Background(), mc)
	})
	if err != nil {
		t.Fatalf("point %s at %s: %v", name, endpoint, err)
	}
}

// ready says why a MemberCluster is not Ready without managed taints.
func (e *chaosEnv) ready(ctx context.Context, name string) error {
	mc := &v1alpha1.MemberCluster{}
	if err := e.host.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("%s Ready condition %+v", name, c)
	}
	for _, tn := range mc.Spec.Taints {
		if tn.Key == v1alpha1.TaintUnreachable || tn.Key == v1alpha1.TaintNotReady {
			return fmt.Errorf("%s tainted %s:%s", name, tn.Key, tn.Effect)
		}
	}
	return nil
}
