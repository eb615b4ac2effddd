package interpreters_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/manager"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// cloneSet is a CloneSet template with replicas that mounts a ConfigMap.
func cloneSet(ns, name string, replicas int64, configMap string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"containers": []any{map[string]any{"name": "web", "image": "nginx",
						"volumeMounts": []any{map[string]any{"name": "config", "mountPath": "/etc/web"}}}},
					"volumes": []any{map[string]any{"name": "config", "configMap": map[string]any{"name": configMap}}},
				},
			},
		},
	}}
}

// memberReplicas returns each member copy's spec.replicas (absent: -1).
func memberReplicas(ctx context.Context, ns, name string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, m := range env.Members {
		u, err := m.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out[m.Name] = -1
			continue
		}
		if err != nil {
			return nil, err
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		out[m.Name] = n
	}
	return out, nil
}

// reportStatus sets a member copy's status as the member's CloneSet
// controller would: every pod ready when ready is true, none otherwise.
func reportStatus(ctx context.Context, m *testenv.Cluster, ns, name string, ready bool) error {
	u, err := m.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	readyN := int64(0)
	if ready {
		readyN = n
	}
	u.Object["status"] = map[string]any{
		"observedGeneration": u.GetGeneration(), "replicas": n, "readyReplicas": readyN, "availableReplicas": readyN,
		"updatedReplicas": n, "updatedReadyReplicas": readyN, "updateRevision": name + "-1", "currentRevision": name + "-1",
		"labelSelector": "app=" + name,
	}
	_, err = m.Dynamic.Resource(cloneSets).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// shippedCloneSet is the shipped CloneSet interpreter.
func shippedCloneSet(t *testing.T) *v1alpha1.WorkloadInterpreter {
	t.Helper()
	wi, err := interpreters.Named("cloneset.apps.kruise.io")
	if err != nil {
		t.Fatal(err)
	}
	return wi
}

// waitReady waits for the interpreter's Ready condition to have a status
// and reason, and returns it.
func waitReady(t *testing.T, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("WorkloadInterpreter %s Ready=%s (%s)", name, status, reason), func(ctx context.Context) error {
		wi := &v1alpha1.WorkloadInterpreter{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, wi); err != nil {
			return err
		}
		c := meta.FindStatusCondition(wi.Status.Conditions, "Ready")
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != wi.Generation {
			return fmt.Errorf("conditions %v at generation %d", wi.Status.Conditions, wi.Generation)
		}
		got = *c
		return nil
	})
	return got
}

// TestCloneSetIsDividedAndItsStatusAggregated federates a CloneSet with
// the shipped interpreter created after the CloneSet: without a restart,
// the host's status becomes the members' sum, the ConfigMap it mounts
// follows it, scaling re-divides, and a broken interpreter stops being
// used without stalling the CloneSet.
func TestCloneSetIsDividedAndItsStatusAggregated(t *testing.T) {
	c := startControlPlane(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	policy := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "clonesets", Namespace: ns},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"}},
			Placement: v1alpha1.Placement{
				ClusterNames:      []string{env.Members[0].Name, env.Members[1].Name},
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide},
			},
		},
	}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Create(ctx, cloneSet(ns, "web", 9, cm.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the CloneSet's 9 replicas divided over both members", func(ctx context.Context) error {
		got, err := memberReplicas(ctx, ns, "web")
		if err != nil {
			return err
		}
		if got["member-1"]+got["member-2"] != 9 || got["member-1"] < 4 || got["member-2"] < 4 {
			return fmt.Errorf("member replicas %v", got)
		}
		return nil
	})
	for _, m := range env.Members {
		if err := reportStatus(ctx, m, ns, "web", true); err != nil {
			t.Fatal(err)
		}
	}

	// No interpreter yet: the host's status stays as the user left it.
	host, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(host.Object, "status", "readyReplicas"); found {
		t.Fatalf("host status written without an interpreter: %v", host.Object["status"])
	}

	wi := shippedCloneSet(t)
	if err := c.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), wi) })
	cond := waitReady(t, wi.Name, metav1.ConditionTrue, "TypeChecked")
	if !strings.Contains(cond.Message, "clonesets.apps.kruise.io") {
		t.Fatalf("Ready message %q does not name the CRD", cond.Message)
	}
	waitHostStatus(t, ns, "web", 9, 9)

	// The ConfigMap the pod template mounts follows the CloneSet.
	testenv.Eventually(t, waitTimeout, "the mounted ConfigMap in both members", func(ctx context.Context) error {
		for _, m := range env.Members {
			if _, err := m.Client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		return nil
	})

	// Scaling on the host re-divides; the members report the new counts.
	patch := []byte(`{"spec":{"replicas":4}}`)
	if _, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "4 replicas divided 2/2", func(ctx context.Context) error {
		got, err := memberReplicas(ctx, ns, "web")
		if err != nil {
			return err
		}
		if got["member-1"] != 2 || got["member-2"] != 2 {
			return fmt.Errorf("member replicas %v", got)
		}
		return nil
	})
	testenv.Eventually(t, waitTimeout, "members report the scaled copies", func(ctx context.Context) error {
		for _, m := range env.Members {
			if err := reportStatus(ctx, m, ns, "web", m.Name == "member-1"); err != nil {
				return err
			}
		}
		return nil
	})
	waitHostStatus(t, ns, "web", 4, 2)

	// A status rule that type-checks but fails on this object (a field no
	// member reports) leaves its field as it was and says why in a
	// Warning event on the host object; the other fields still follow.
	setStatusRule(t, wi.Name, "status.labelSelector", v1alpha1.StatusField{
		Path: "status.labelSelector", Aggregate: v1alpha1.AggregateExpression,
		Expression: `members[0].object.status.collisionCount >= 0 ? "app=changed" : "app=changed"`,
	})
	testenv.Eventually(t, waitTimeout, "a StatusRuleFailed event on the host CloneSet", func(ctx context.Context) error {
		for _, m := range env.Members {
			if err := reportStatus(ctx, m, ns, "web", true); err != nil { // a member change: the status is aggregated again
				return err
			}
		}
		evs, err := env.Host.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=StatusRuleFailed"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "CloneSet" && strings.Contains(e.Message, "collisionCount") && strings.Contains(e.Message, "keeps its last value") {
				return nil
			}
		}
		return fmt.Errorf("events %v", evs.Items)
	})
	waitHostStatus(t, ns, "web", 4, 4)
	host, err = env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sel, _, _ := unstructured.NestedString(host.Object, "status", "labelSelector"); sel != "app=web" {
		t.Fatalf("host status.labelSelector = %q after its rule failed; want the last value app=web", sel)
	}
	setStatusRule(t, wi.Name, "status.labelSelector", v1alpha1.StatusField{Path: "status.labelSelector", Aggregate: v1alpha1.AggregateFirst})

	// Admission refuses a broken change, with the field path.
	waitWebhookInstalled(t)
	testenv.Eventually(t, waitTimeout, "a broken change refused at admission", func(ctx context.Context) error {
		cur := &v1alpha1.WorkloadInterpreter{}
		if err := c.Get(ctx, client.ObjectKey{Name: wi.Name}, cur); err != nil {
			return err
		}
		cur.Spec.Health.Ready = "object.status.redyReplicas > 0"
		err := c.Update(ctx, cur)
		switch {
		case err == nil:
			t.Fatalf("a broken interpreter was stored: the webhook did not refuse it")
		case apierrors.IsConflict(err):
			return err // try again on the newer version
		case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.health.ready") || !strings.Contains(err.Error(), "undefined field 'redyReplicas'"):
			t.Fatalf("update: %v; want 422 naming spec.health.ready and the undefined field", err)
		}
		return nil
	})

	// A CRD change that takes away a field an expression reads says so
	// in a condition, and the generation in use stays (as compiled
	// against the earlier schema); the CloneSet keeps its copies; the
	// field back, the interpreter checks again.
	setStatusField(t, "updatedReadyReplicas", false)
	cond = waitReady(t, wi.Name, metav1.ConditionFalse, "Invalid")
	if !strings.Contains(cond.Message, "updatedReadyReplicas") || !strings.Contains(cond.Message, "stays in use") {
		t.Fatalf("Invalid message %q does not name the missing field and say the generation stays in use", cond.Message)
	}
	// The interpreter was Ready before: the change to Invalid is an event.
	testenv.Eventually(t, waitTimeout, "a Warning event Invalid on the interpreter", func(ctx context.Context) error {
		evs, err := env.Host.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + wi.Name})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "Invalid" && strings.Contains(e.Message, "updatedReadyReplicas") {
				return nil
			}
			seen = append(seen, e.Namespace+" "+e.Type+" "+e.Reason+": "+e.Message)
		}
		return fmt.Errorf("events %q", seen)
	})
	got, err := memberReplicas(ctx, ns, "web")
	if err != nil || got["member-1"] != 2 || got["member-2"] != 2 {
		t.Fatalf("member replicas after the interpreter broke: %v, %v", got, err)
	}
	setStatusField(t, "updatedReadyReplicas", true)
	waitReady(t, wi.Name, metav1.ConditionTrue, "TypeChecked")
}

// setStatusRule replaces the interpreter's status rule for path with
// rule and waits for the interpreter to be Ready with it.
func setStatusRule(t *testing.T, name, path string, rule v1alpha1.StatusField) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "status rule "+path+" replaced", func(ctx context.Context) error {
		wi := &v1alpha1.WorkloadInterpreter{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, wi); err != nil {
			return err
		}
		i := slices.IndexFunc(wi.Spec.Status.Fields, func(f v1alpha1.StatusField) bool { return string(f.Path) == path })
		if i < 0 {
			t.Fatalf("interpreter %s has no status rule for %s", name, path)
		}
		wi.Spec.Status.Fields[i] = rule
		err := admin.Update(ctx, wi)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("update the interpreter's rule for %s: %v", path, err)
		}
		return err
	})
	waitReady(t, name, metav1.ConditionTrue, "TypeChecked")
}

// setStatusField removes a status field from the host's CloneSet CRD, or
// puts it back.
func setStatusField(t *testing.T, field string, present bool) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("CloneSet CRD status.%s present=%v", field, present), func(ctx context.Context) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := admin.Get(ctx, client.ObjectKey{Name: "clonesets.apps.kruise.io"}, crd); err != nil {
			return err
		}
		props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
		if present {
			props.Properties[field] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
		} else {
			delete(props.Properties, field)
		}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = props
		return admin.Update(ctx, crd)
	})
}

// waitHostStatus waits for the host CloneSet's aggregated replicas and
// readyReplicas.
func waitHostStatus(t *testing.T, ns, name string, replicas, ready int64) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("host status replicas=%d readyReplicas=%d", replicas, ready), func(ctx context.Context) error {
		host, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r, _, _ := unstructured.NestedInt64(host.Object, "status", "replicas")
		rr, _, _ := unstructured.NestedInt64(host.Object, "status", "readyReplicas")
		og, _, _ := unstructured.NestedInt64(host.Object, "status", "observedGeneration")
		if r != replicas || rr != ready || og != host.GetGeneration() {
			return fmt.Errorf("host status %v (generation %d)", host.Object["status"], host.GetGeneration())
		}
		return nil
	})
}

// TestAdmissionRefusesBadInterpreters: the CRD's rules and the webhook
// refuse bad interpreters with the field and the reason, and store
// nothing.
func TestAdmissionRefusesBadInterpreters(t *testing.T) {
	c := startControlPlane(t)
	waitWebhookInstalled(t)
	base := shippedCloneSet(t)
	cases := []struct {
		name   string
		change func(*v1alpha1.WorkloadInterpreter)
		want   string
	}{
		{"name not of the kind", func(wi *v1alpha1.WorkloadInterpreter) { wi.Name = "clonesets" },
			"the name must be the target's kind in lower case"},
		{"a built-in kind", func(wi *v1alpha1.WorkloadInterpreter) {
			wi.Name, wi.Spec.Target = "deployment.apps", v1alpha1.InterpretedKind{Group: "apps", Kind: "Deployment"}
		}, "Flotilla describes this kind itself"},
		{"expression aggregate without an expression", func(wi *v1alpha1.WorkloadInterpreter) {
			wi.Spec.Status.Fields = append(wi.Spec.Status.Fields, v1alpha1.StatusField{Path: "status.x", Aggregate: v1alpha1.AggregateExpression})
		}, "expression is required with aggregate Expression"},
		{"a path with an index", func(wi *v1alpha1.WorkloadInterpreter) { wi.Spec.Replicas.Path = "spec.replicas[0]" },
			"spec.replicas.path"},
		{"over the cost budget", func(wi *v1alpha1.WorkloadInterpreter) {
			wi.Spec.Health.Ready = "object.status.conditions.all(a, object.status.conditions.all(b, object.status.conditions.all(c, a.type != b.type || b.type != c.type)))"
		}, "exceeds the budget"},
		{"not a bool", func(wi *v1alpha1.WorkloadInterpreter) { wi.Spec.Health.Failed = "object.status.replicas" },
			"spec.health.failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wi := base.DeepCopy()
			tc.change(wi)
			err := c.Create(context.Background(), wi)
			if err == nil {
				_ = c.Delete(context.Background(), wi)
				t.Fatalf("created; want a refusal with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want 422 with %q", err, tc.want)
			}
		})
	}
}

// waitWebhookInstalled waits until the leader has installed the
// WorkloadInterpreter webhook configuration.
func waitWebhookInstalled(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "ValidatingWebhookConfiguration "+manager.InterpreterWebhookName, func(ctx context.Context) error {
		_, err := env.Host.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, manager.InterpreterWebhookName, metav1.GetOptions{})
		return err
	})
}
