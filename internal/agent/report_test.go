package agent

import (
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
