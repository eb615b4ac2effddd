package schedule

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestSeedRefusesWhatDoesNotFit: a seed must keep the clusters of a
// decision in force, with counts and no ordinal ranges; anything else is
// refused before any write (the client is nil here).
func TestSeedRefusesWhatDoesNotFit(t *testing.T) {
	placed := func(status metav1.ConditionStatus, p ...v1alpha1.ClusterPlacement) *v1alpha1.FederatedObject {
		fo := &v1alpha1.FederatedObject{}
		fo.Status.ScheduledClusters = p
		fo.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionScheduled, Status: status, Reason: "Scheduled"}}
		return fo
	}
	a4 := v1alpha1.ClusterPlacement{Cluster: "a", Replicas: ptr.To[int32](4)}
	b4 := v1alpha1.ClusterPlacement{Cluster: "b", Replicas: ptr.To[int32](4)}
	tests := []struct {
		name   string
		fo     *v1alpha1.FederatedObject
		counts map[string]int32
	}{
		{"another cluster", placed(metav1.ConditionTrue, a4, b4), map[string]int32{"a": 3, "c": 5}},
		{"a cluster fewer", placed(metav1.ConditionTrue, a4, b4), map[string]int32{"a": 8}},
		{"not scheduled", placed(metav1.ConditionFalse, a4, b4), map[string]int32{"a": 3, "b": 5}},
		{"no replica counts", placed(metav1.ConditionTrue, v1alpha1.ClusterPlacement{Cluster: "a"}), map[string]int32{"a": 3}},
		{"ordinal ranges", placed(metav1.ConditionTrue, v1alpha1.ClusterPlacement{Cluster: "a", Replicas: ptr.To[int32](3), OrdinalStart: ptr.To[int32](0)}), map[string]int32{"a": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Seed(context.Background(), nil, tt.fo, tt.counts); !errors.Is(err, ErrSeedMismatch) {
				t.Errorf("Seed = %v, want ErrSeedMismatch", err)
			}
		})
	}
}
