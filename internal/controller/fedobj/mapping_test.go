package fedobj

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestReadinessOrLabelsChanged(t *testing.T) {
	mc := func(ready metav1.ConditionStatus, labels map[string]string, generation int64) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: labels, Generation: generation},
			Status:     v1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready}}},
		}
	}
	east := map[string]string{"region": "east"}
	west := map[string]string{"region": "west"}
	tests := []struct {
		name     string
		old, new *v1alpha1.MemberCluster
		want     bool
	}{
		{name: "nothing relevant", old: mc(metav1.ConditionTrue, east, 1), new: mc(metav1.ConditionTrue, east, 2), want: false},
		{name: "becomes not ready", old: mc(metav1.ConditionTrue, east, 1), new: mc(metav1.ConditionFalse, east, 1), want: true},
		{name: "becomes ready", old: mc(metav1.ConditionUnknown, east, 1), new: mc(metav1.ConditionTrue, east, 1), want: true},
		{name: "unknown to false", old: mc(metav1.ConditionUnknown, east, 1), new: mc(metav1.ConditionFalse, east, 1), want: false},
		{name: "labels change", old: mc(metav1.ConditionTrue, east, 1), new: mc(metav1.ConditionTrue, west, 1), want: true},
		{name: "labels removed", old: mc(metav1.ConditionTrue, east, 1), new: mc(metav1.ConditionTrue, nil, 1), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadinessOrLabelsChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
