package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestRenderKindsRestricted(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	writable := []v1alpha1.APIResource{
		{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"},
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"},
	}
	restricted := append(append([]v1alpha1.APIResource(nil), writable...),
		v1alpha1.APIResource{Version: "v1", Kind: "Secret", Resource: "secrets", ReadOnly: true},
		v1alpha1.APIResource{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", ReadOnly: true})
	stale := metav1.Condition{Type: v1alpha1.ConditionKindsRestricted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMemberRBAC, Message: "old"}
	tests := []struct {
		name         string
		mode         v1alpha1.SyncMode
		resources    []v1alpha1.APIResource
		conditions   []metav1.Condition
		want         bool
		wantInMsg    []string
		wantNotInMsg []string
	}{
		{name: "every kind writable: no condition", resources: writable},
		{name: "every kind writable again: condition removed", resources: writable, conditions: []metav1.Condition{stale}},
		{name: "not discovered yet: no condition", resources: nil},
		{name: "push, restricted", resources: restricted, want: true,
			wantInMsg:    []string{"control plane write only configmaps, deployments.apps", "read-only: secrets, jobs.batch", "flotilla join east"},
			wantNotInMsg: []string{"agent"}},
		{name: "pull, agent's RBAC narrow", mode: v1alpha1.SyncModePull, resources: restricted, want: true,
			wantInMsg:    []string{"lets the agent write only configmaps, deployments.apps", "Grant the agent's identity"},
			wantNotInMsg: []string{"--restrict-kinds"}},
		{name: "nothing writable", resources: restricted[2:], want: true, wantInMsg: []string{"write only none of the resources it serves"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: 3}, Spec: v1alpha1.MemberClusterSpec{SyncMode: tt.mode}}
			st := v1alpha1.MemberClusterStatus{APIResources: tt.resources, Conditions: append([]metav1.Condition(nil), tt.conditions...)}
			renderKindsRestricted(&st, mc, now)
			c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionKindsRestricted)
			if !tt.want {
				if c != nil {
					t.Fatalf("condition %+v, want none", c)
				}
				return
			}
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonMemberRBAC || c.ObservedGeneration != 3 {
				t.Fatalf("condition %+v, want True/%s at generation 3", c, v1alpha1.ReasonMemberRBAC)
			}
			for _, s := range tt.wantInMsg {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
			for _, s := range tt.wantNotInMsg {
				if strings.Contains(c.Message, s) {
					t.Errorf("message %q has %q", c.Message, s)
				}
			}
		})
	}
}
