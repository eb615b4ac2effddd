package agent

import (
	"encoding/json"
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
// (a custom kind) is reported without its largest spec fields, so that
// the intent, which holds the spec already, stays small enough to store;
// the small fields the hub reads (replicas wherever the kind keeps them,
// the selector, a pause flag) stay, and a small copy is reported whole.
func TestReportedCutsALargeSpec(t *testing.T) {
	obj := func(blob int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "resourceVersion": "7"},
			"spec": map[string]any{"size": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "w"}},
				"updateStrategy": map[string]any{"paused": true},
				"template":       map[string]any{"data": strings.Repeat("x", blob)},
				"blob":           strings.Repeat("y", blob/2)},
			"status": map[string]any{"readyReplicas": int64(3)},
		}}
	}
	small := reported(obj(1024)).Object.(*unstructured.Unstructured)
	if data, _, _ := unstructured.NestedString(small.Object, "spec", "template", "data"); len(data) != 1024 {
		t.Errorf("a small copy's spec was cut: %d bytes of template", len(data))
	}
	// The template alone brings it within the bound: it goes, the rest stays.
	large := reported(obj(maxReportedCopy)).Object.(*unstructured.Unstructured)
	spec, _, _ := unstructured.NestedMap(large.Object, "spec")
	if _, found := spec["template"]; found {
		t.Error("a large copy's largest field was kept")
	}
	for _, k := range []string{"size", "selector", "updateStrategy", "blob"} {
		if _, found := spec[k]; !found {
			t.Errorf("a large copy lost spec.%s, which fits", k)
		}
	}
	if b, _ := json.Marshal(large.Object); len(b) > maxReportedCopy {
		t.Errorf("the reported copy encodes to %d bytes, over %d", len(b), maxReportedCopy)
	}
	if ready, _, _ := unstructured.NestedInt64(large.Object, "status", "readyReplicas"); ready != 3 || large.GetResourceVersion() != "" {
		t.Errorf("a large copy's status and metadata: ready %d, resourceVersion %q", ready, large.GetResourceVersion())
	}
}
