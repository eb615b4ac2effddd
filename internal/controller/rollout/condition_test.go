package rollout

import (
	"strings"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// TestConditionNamesWhatUsesTheBudget: a rollout that can admit nobody
// because pods outside any share use the budget says which.
func TestConditionNamesWhatUsesTheBudget(t *testing.T) {
	copyOf := func(name string, spec, total, available int32) rollout.Member {
		return rollout.Member{Cluster: name, Usable: true, HasCopy: true, SpecReplicas: spec, Total: total, Available: available}
	}
	waiting := &v1alpha1.RolloutStatus{Revision: "r2", MaxSurge: 0, MaxUnavailable: 1, Clusters: []v1alpha1.ClusterRollout{
		{Cluster: "a", State: v1alpha1.RolloutWaiting}, {Cluster: "b", State: v1alpha1.RolloutWaiting},
	}}
	tests := []struct {
		name    string
		plan    *v1alpha1.RolloutStatus
		paused  bool
		members []rollout.Member
		want    string // in the message; "" for no budget part
	}{
		{"a Pending pod uses the budget", waiting, false,
			[]rollout.Member{copyOf("a", 3, 3, 3), copyOf("b", 3, 3, 2)}, "no budget left to admit them: b (1 unavailable)"},
		{"extra pods use the budget", waiting, false,
			[]rollout.Member{copyOf("a", 3, 4, 3), copyOf("b", 3, 3, 3)}, "no budget left to admit them: a (1 above its replicas)"},
		{"a paused host object says that instead", waiting, true,
			[]rollout.Member{copyOf("a", 3, 3, 3), copyOf("b", 3, 3, 2)}, ""},
		{"nothing uses the budget: no such part", waiting, false,
			[]rollout.Member{copyOf("a", 3, 3, 3), copyOf("b", 3, 3, 3)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := condition(tt.plan, tt.paused, tt.members)
			has := strings.Contains(c.Message, "no budget left")
			if tt.want == "" && has || tt.want != "" && !strings.Contains(c.Message, tt.want) {
				t.Errorf("message %q, want %q", c.Message, tt.want)
			}
		})
	}
}
