package agent

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func projection(rv string, ready int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "resourceVersion": rv},
		"status":   map[string]any{"readyReplicas": ready},
	}}
}

func TestCompare(t *testing.T) {
	stored := func(c *runtime.RawExtension) *runtime.RawExtension {
		// What the hub returns: raw JSON.
		b, err := c.Object.(*unstructured.Unstructured).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return &runtime.RawExtension{Raw: b}
	}
	applied := func(c *runtime.RawExtension) v1alpha1.ClusterIntentStatus {
		return v1alpha1.ClusterIntentStatus{ObservedGeneration: 2, Outcome: v1alpha1.IntentApplied, Copy: c}
	}
	old := applied(stored(reported(projection("10", 1))))
	tests := []struct {
		name           string
		next           v1alpha1.ClusterIntentStatus
		same, copyOnly bool
	}{
		{name: "only the resourceVersion moved", next: applied(reported(projection("11", 1))), same: true},
		{name: "the copy's status moved", next: applied(reported(projection("12", 2))), copyOnly: true},
		{name: "a new generation", next: v1alpha1.ClusterIntentStatus{ObservedGeneration: 3, Outcome: v1alpha1.IntentApplied, Copy: reported(projection("10", 1))}},
		{name: "the copy is gone", next: applied(nil), copyOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same, copyOnly := compare(old, tt.next)
			if same != tt.same || copyOnly != tt.copyOnly {
				t.Errorf("compare = %v, %v; want %v, %v", same, copyOnly, tt.same, tt.copyOnly)
			}
		})
	}
}

func TestReportedLeavesTheCacheAlone(t *testing.T) {
	p := projection("10", 1)
	r := reported(p)
	if _, found, _ := unstructured.NestedString(r.Object.(*unstructured.Unstructured).Object, "metadata", "resourceVersion"); found {
		t.Error("the report carries the resourceVersion")
	}
	if p.GetResourceVersion() != "10" {
		t.Error("reported changed the cached projection")
	}
}

// TestReportedCutsALargeSpec: a copy whose projection keeps a large spec
// (a custom kind) is reported with only its replicas and selector, so
// that the intent, which holds the spec already, stays small enough to
// store; a small one is reported whole.
func TestReportedCutsALargeSpec(t *testing.T) {
	obj := func(blob int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "resourceVersion": "7"},
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "w"}},
				"blob": strings.Repeat("x", blob)},
			"status": map[string]any{"readyReplicas": int64(3)},
		}}
	}
	small := reported(obj(1024)).Object.(*unstructured.Unstructured)
	if blob, _, _ := unstructured.NestedString(small.Object, "spec", "blob"); len(blob) != 1024 {
		t.Errorf("a small copy's spec was cut: %d bytes of blob", len(blob))
	}
	large := reported(obj(maxReportedCopy)).Object.(*unstructured.Unstructured)
	spec, _, _ := unstructured.NestedMap(large.Object, "spec")
	if _, found := spec["blob"]; found || spec["replicas"] != int64(3) || spec["selector"] == nil {
		t.Errorf("a large copy's spec = %v, want only replicas and selector", spec)
	}
	if ready, _, _ := unstructured.NestedInt64(large.Object, "status", "readyReplicas"); ready != 3 || large.GetResourceVersion() != "" {
		t.Errorf("a large copy's status and metadata: ready %d, resourceVersion %q", ready, large.GetResourceVersion())
	}
}
