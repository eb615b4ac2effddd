package dispatch_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/internal/dispatch"
)

func TestFieldRemovedFromTheTemplateIsRemovedInTheMember(t *testing.T) {
	a, writes := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)

	withEnv := deployment(ns, "web", "nginx:1.27")
	containers, _, _ := unstructured.NestedSlice(withEnv.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["env"] = []any{map[string]any{"name": "MODE", "value": "debug"}}
	_ = unstructured.SetNestedSlice(withEnv.Object, containers, "spec", "template", "spec", "containers")
	withEnv.SetLabels(map[string]string{"tier": "web"})
	mustApply(t, a, withEnv, dispatch.Options{}, dispatch.Created)

	// The template drops the env var and the label: the member's copy must
	// lose them too, though it holds every field the template still sets.
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Updated)
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ = unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if env, found := containers[0].(map[string]any)["env"]; found {
		t.Errorf("env still in the member after the template dropped it: %v", env)
	}
	if _, found := live.GetLabels()["tier"]; found {
		t.Errorf("label still in the member after the template dropped it: %v", live.GetLabels())
	}
	writes.take()
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Unchanged)
	if w := writes.take(); len(w) != 0 {
		t.Fatalf("unchanged template written again: %v", w)
	}
}

func TestKeepLiveKeepsTheMembersValue(t *testing.T) {
	a, _ := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Created)
	// A member HPA scales to 5.
	if _, err := res.Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "hpa"}); err != nil {
		t.Fatal(err)
	}
	keep := dispatch.Options{KeepLive: [][]string{{"spec", "replicas"}}}
	mustApply(t, a, deployment(ns, "web", "nginx:1.28"), keep, dispatch.Updated)
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); n != 5 {
		t.Errorf("replicas = %d after a template change, want the member's 5 kept", n)
	}
}
