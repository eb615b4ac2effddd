package fedobj

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestOwned(t *testing.T) {
	scheduled := metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled"}
	propagated := metav1.Condition{Type: v1alpha1.ConditionPropagated, Status: metav1.ConditionTrue, Reason: "Propagated"}
	full := v1alpha1.FederatedObjectStatus{
		ObservedGeneration: 3,
		Conditions:         []metav1.Condition{scheduled, propagated},
		ScheduledClusters:  []v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](2)}},
		Placement:          "a=2",
		SchedulingBasis:    "b",
		CapacityLimits:     []v1alpha1.CapacityLimit{{Cluster: "a", Replicas: 1, Count: 1}},
		Clusters:           []v1alpha1.ClusterPropagationStatus{{Cluster: "a", Reason: v1alpha1.PropagationOK}},
	}
	tests := []struct {
		manager string
		want    v1alpha1.FederatedObjectStatus
	}{
		{v1alpha1.FieldManagerSchedule, v1alpha1.FederatedObjectStatus{
			Conditions: []metav1.Condition{scheduled}, ScheduledClusters: full.ScheduledClusters, Placement: "a=2", SchedulingBasis: "b"}},
		{v1alpha1.FieldManagerPropagate, v1alpha1.FederatedObjectStatus{
			ObservedGeneration: 3, Conditions: []metav1.Condition{propagated}, Clusters: full.Clusters}},
		{v1alpha1.FieldManagerMigrate, v1alpha1.FederatedObjectStatus{CapacityLimits: full.CapacityLimits}},
		{"someone-else", v1alpha1.FederatedObjectStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.manager, func(t *testing.T) {
			if got := Owned(full, tt.manager); !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("Owned() = %+v, want %+v", got, tt.want)
			}
		})
	}
	// Together the managers own every field: nothing is left unwritten.
	var union v1alpha1.FederatedObjectStatus
	for _, m := range []string{v1alpha1.FieldManagerSchedule, v1alpha1.FieldManagerPropagate, v1alpha1.FieldManagerMigrate} {
		o := Owned(full, m)
		union.Conditions = append(union.Conditions, o.Conditions...)
		union.ObservedGeneration = max(union.ObservedGeneration, o.ObservedGeneration)
		union.ScheduledClusters = append(union.ScheduledClusters, o.ScheduledClusters...)
		union.Placement += o.Placement
		union.SchedulingBasis += o.SchedulingBasis
		union.CapacityLimits = append(union.CapacityLimits, o.CapacityLimits...)
		union.Clusters = append(union.Clusters, o.Clusters...)
	}
	if !equality.Semantic.DeepEqual(union, full) {
		t.Errorf("the managers together own %+v, want every field of %+v", union, full)
	}
}

func TestCondition(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	st := v1alpha1.FederatedObjectStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, LastTransitionTime: then}}}
	tests := []struct {
		name     string
		status   metav1.ConditionStatus
		typ      string
		wantThen bool
	}{
		{"same status keeps the transition time", metav1.ConditionTrue, v1alpha1.ConditionScheduled, true},
		{"a new status is a transition", metav1.ConditionFalse, v1alpha1.ConditionScheduled, false},
		{"a new condition is a transition", metav1.ConditionTrue, v1alpha1.ConditionPropagated, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Condition(st, metav1.Condition{Type: tt.typ, Status: tt.status})
			if kept := got.LastTransitionTime.Equal(&then); kept != tt.wantThen {
				t.Errorf("LastTransitionTime = %v, kept %v, want kept %v", got.LastTransitionTime, kept, tt.wantThen)
			}
			if got.LastTransitionTime.IsZero() {
				t.Error("LastTransitionTime unset")
			}
		})
	}
}

func TestPlacementChanged(t *testing.T) {
	fo := func(change func(*v1alpha1.FederatedObject)) *v1alpha1.FederatedObject {
		o := &v1alpha1.FederatedObject{}
		change(o)
		return o
	}
	on := func(clusters ...string) func(*v1alpha1.FederatedObject) {
		return func(o *v1alpha1.FederatedObject) {
			for _, c := range clusters {
				o.Status.ScheduledClusters = append(o.Status.ScheduledClusters, v1alpha1.ClusterPlacement{Cluster: c})
			}
			o.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue}}
		}
	}
	tests := []struct {
		name     string
		old, new *v1alpha1.FederatedObject
		want     bool
	}{
		{"unchanged", fo(on("a")), fo(on("a")), false},
		{"moved", fo(on("a")), fo(on("b")), true},
		{"first decision, nowhere", fo(func(*v1alpha1.FederatedObject) {}), fo(on()), true},
		{"legacy spec.placement carried into status", fo(func(o *v1alpha1.FederatedObject) {
			o.Spec.Placement = []v1alpha1.ClusterPlacement{{Cluster: "a"}}
		}), fo(on("a")), false},
		{"only another controller's field", fo(on("a")), fo(func(o *v1alpha1.FederatedObject) {
			on("a")(o)
			o.Status.Clusters = []v1alpha1.ClusterPropagationStatus{{Cluster: "a"}}
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlacementChanged.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("PlacementChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
