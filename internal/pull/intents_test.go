package pull

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// reportedIntent is a cached intent at generation 1 whose agent reported
// outcome and a copy with copyGen and the given status.
func reportedIntent(outcome string, copyGen int64, replicas int64, label string) intent {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "flotilla-cluster-a", "generation": int64(1)},
		"spec":     map[string]any{"hash": "h1"},
		"status": map[string]any{
			"observedGeneration": int64(1), "outcome": outcome,
			"copy": map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "generation": copyGen, "labels": map[string]any{"app": label}},
				"status":   map[string]any{"readyReplicas": replicas},
			},
		},
	}}
	return intent{u}
}

func TestCopyStatusOnly(t *testing.T) {
	base := reportedIntent("Applied", 3, 1, "web")
	tests := []struct {
		name string
		cur  intent
		want bool
	}{
		{name: "copy status changed", cur: reportedIntent("Applied", 3, 2, "web"), want: true},
		{name: "verdict changed", cur: reportedIntent("Failed", 3, 1, "web"), want: false},
		{name: "copy spec changed", cur: reportedIntent("Applied", 4, 1, "web"), want: false},
		{name: "copy labels changed", cur: reportedIntent("Applied", 3, 1, "api"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := copyStatusOnly(base, tt.cur); got != tt.want {
				t.Errorf("copyStatusOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSlimKeepsWhatTheHubReads(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web.shop.deployments-x", "namespace": "flotilla-cluster-a"},
		"spec": map[string]any{
			"resource": map[string]any{"group": "apps", "version": "v1", "resource": "deployments"},
			"hash":     "h1", "adopt": true,
			"object": map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"a": "b"}},
				"spec":     map[string]any{"replicas": int64(3)},
			},
		},
	}}
	out, err := slim(u)
	if err != nil {
		t.Fatal(err)
	}
	i := intent{out.(*unstructured.Unstructured)}
	if ns, name := i.object(); ns != "shop" || name != "web" {
		t.Errorf("object = %s/%s, want shop/web", ns, name)
	}
	if i.hash() != "h1" || !i.adopt() || i.resource() != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) {
		t.Errorf("spec fields lost: hash %q adopt %v resource %v", i.hash(), i.adopt(), i.resource())
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(i.u.Object, "spec", "object", "spec"); found {
		t.Error("slim kept the object's spec")
	}
	keys, _ := indexObject(i.u)
	if len(keys) != 1 || keys[0] != "Deployment.apps/shop/web" {
		t.Errorf("index keys %v", keys)
	}
}

func TestMapper(t *testing.T) {
	m := Mapper([]v1alpha1.APIResource{
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Scope: v1alpha1.ScopeNamespaced},
		{Version: "v1", Kind: "Namespace", Resource: "namespaces", Scope: v1alpha1.ScopeCluster},
	})
	mapping, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	if err != nil || mapping.Resource.Resource != "deployments" || mapping.Scope.Name() != "namespace" {
		t.Errorf("Deployment: %+v, %v", mapping, err)
	}
	if mapping, err := m.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1"); err != nil || mapping.Scope.Name() != "root" {
		t.Errorf("Namespace: %+v, %v", mapping, err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "batch", Kind: "Job"}, "v1"); err == nil {
		t.Error("a kind the member did not report was mapped")
	}
}
