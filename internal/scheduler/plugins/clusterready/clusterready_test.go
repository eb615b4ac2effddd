package clusterready

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestFilter(t *testing.T) {
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{
			{Type: v1alpha1.ConditionOffline, Status: metav1.ConditionFalse},
			{Type: v1alpha1.ConditionReady, Status: s},
		}
	}
	tests := []struct {
		name       string
		conditions []metav1.Condition
		placed     bool
		pass       bool
	}{
		{name: "Ready", conditions: ready(metav1.ConditionTrue), pass: true},
		{name: "not Ready", conditions: ready(metav1.ConditionFalse)},
		{name: "Unknown", conditions: ready(metav1.ConditionUnknown)},
		{name: "no condition yet"},
		{name: "only Offline", conditions: []metav1.Condition{{Type: v1alpha1.ConditionOffline, Status: metav1.ConditionTrue}}},
		{name: "not Ready, placed: stays", conditions: ready(metav1.ConditionFalse), placed: true, pass: true},
		{name: "no condition, placed: stays", placed: true, pass: true},
	}
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(framework.FilterPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{Conditions: tt.conditions}}
			c.Name = "member-1"
			u := &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{},
				Current: []v1alpha1.ClusterPlacement{{Cluster: "member-2"}}}
			if tt.placed {
				u.Current = append(u.Current, v1alpha1.ClusterPlacement{Cluster: "member-1"})
			}
			s := f.Filter(context.Background(), framework.CycleState{}, u, c)
			switch {
			case tt.pass && !s.IsSuccess():
				t.Errorf("excluded with %q", s.Reason)
			case !tt.pass && (s.IsSuccess() || s.Code != framework.Unschedulable || s.Reason != "not Ready"):
				t.Errorf("got %+v, want Unschedulable %q", s, "not Ready")
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New([]byte("null")); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"grace":"1m"}`)); err == nil {
		t.Error("New accepted arguments")
	}
}
