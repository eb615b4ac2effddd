package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestRestrictedPushJoin joins the push member again as a user would with
// `flotilla join --restrict-kinds configmaps,deployments.apps`: the
// MemberCluster shows KindsRestricted, a ServiceAccount propagated to both
// members reaches only the pull member while the push member is excluded
// with the reason, a ConfigMap reaches both, and nothing is retried
// against the member's 403. Joining again without the flag lifts it and
// the ServiceAccount follows.
func TestRestrictedPushJoin(t *testing.T) {
	host, members := clients(t)
	ctx := context.Background()
	memberState, _ := env.Cluster(push)
	out := flotilla(t, "join", push, "--kubeconfig", memberState.Kubeconfig, "--restrict-kinds", "configmaps,deployments.apps")
	if !strings.Contains(out, "may write only configmaps, deployments.apps") {
		t.Errorf("join's output does not say what the control plane may write:\n%s", out)
	}
	full := func() {
		flotilla(t, "join", push, "--kubeconfig", memberState.Kubeconfig)
		eventually(t, push+" has every kind writable again", func(ctx context.Context) error {
			if c, err := condition(ctx, host, push, v1alpha1.ConditionKindsRestricted); err == nil {
				return fmt.Errorf("KindsRestricted: %s", c.Message)
			}
			return nil
		})
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			full()
		}
	})
	eventually(t, push+" shows KindsRestricted", func(ctx context.Context) error {
		c, err := condition(ctx, host, push, v1alpha1.ConditionKindsRestricted)
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonMemberRBAC || !strings.Contains(c.Message, "write only configmaps, deployments.apps;") {
			return fmt.Errorf("KindsRestricted: %s %s %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})

	const ns = "restrict-e2e"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings"}, {APIVersion: "v1", Kind: "ServiceAccount", Namespace: ns, Name: "robot"}},
			Placement:         v1alpha1.Placement{ClusterNames: []string{push, pull}},
		}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"mode": "restricted"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "robot"}},
	} {
		if err := host.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = host.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	eventually(t, "the ConfigMap reaches both members", func(ctx context.Context) error {
		for _, m := range []string{push, pull} {
			if _, err := members[m].CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		}
		return nil
	})
	eventually(t, "the ServiceAccount is placed on the pull member only, the push member excluded by its RBAC", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "robot.serviceaccount"}, fo); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "do not let the control plane write v1 ServiceAccount (member RBAC)") {
			return fmt.Errorf("Scheduled: %+v", c)
		}
		if p := fo.Placement(); len(p) != 1 || p[0].Cluster != pull {
			return fmt.Errorf("placement %v, want %s only", p, pull)
		}
		_, err := members[pull].CoreV1().ServiceAccounts(ns).Get(ctx, "robot", metav1.GetOptions{})
		return err
	})
	if _, err := members[push].CoreV1().ServiceAccounts(ns).Get(ctx, "robot", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ServiceAccount reached the restricted member: %v", err)
	}
	events := &corev1.EventList{}
	if err := host.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "forbidden") {
			t.Errorf("a write was refused by the member's RBAC (%s %s x%d): %s", e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
		}
	}

	// Lifting the restriction places the ServiceAccount there too.
	full()
	restored = true
	eventually(t, "the ServiceAccount follows to the push member", func(ctx context.Context) error {
		_, err := members[push].CoreV1().ServiceAccounts(ns).Get(ctx, "robot", metav1.GetOptions{})
		return err
	})
}
