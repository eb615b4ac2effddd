package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// useShippedCloneSet registers the shipped CloneSet interpreter for the
// test.
func useShippedCloneSet(t *testing.T) {
	t.Helper()
	wi, err := interpreters.Named("cloneset.apps.kruise.io")
	if err != nil {
		t.Fatal(err)
	}
	in, errs := interpreter.Compile(&wi.Spec, interpreter.Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	workload.Interpreters.Set(in)
	t.Cleanup(func() { workload.Interpreters.Remove(in.Kind()) })
}

func TestRenderCustomKindRollout(t *testing.T) {
	useShippedCloneSet(t)
	cs := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
			"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": int64(10),
				"updateStrategy": map[string]any{"maxUnavailable": "20%"}}}}
	}
	tests := []struct {
		name        string
		d           rollout.Directive
		wantPaused  bool
		wantHeld    bool
		wantSurge   any
		wantUnavail any
		wantPart    any
	}{
		{"as is", rollout.Directive{Revision: "r1"}, false, false, nil, "20%", nil},
		{"held: its update strategy paused, partitioned above every pod", rollout.Directive{Revision: "r1", Hold: true}, true, true, nil, "20%", "100%"},
		{"a share in its own budget fields", rollout.Directive{Revision: "r1", Share: &rollout.Budget{Surge: 1, Unavailable: 2}}, false, false, int64(1), int64(2), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: cs(), Rollout: &tt.d})
			if err != nil {
				t.Fatal(err)
			}
			paused, _, _ := unstructured.NestedBool(got.Object, "spec", "updateStrategy", "paused")
			surge, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "updateStrategy", "maxSurge")
			unavail, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "updateStrategy", "maxUnavailable")
			part, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "updateStrategy", "partition")
			held := got.GetAnnotations()[v1alpha1.AnnotationHeld] == "true"
			if paused != tt.wantPaused || held != tt.wantHeld || surge != tt.wantSurge || unavail != tt.wantUnavail || part != tt.wantPart || got.GetLabels()[v1alpha1.LabelRevision] != "r1" {
				t.Errorf("paused %v held %v surge %v unavailable %v labels %v; want %v %v %v %v and the revision label",
					paused, held, surge, unavail, got.GetLabels(), tt.wantPaused, tt.wantHeld, tt.wantSurge, tt.wantUnavail)
			}
		})
	}
}
