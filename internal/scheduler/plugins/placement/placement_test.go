package placement

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func cluster(name string, labels map[string]string) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name, c.Labels = name, labels
	return c
}

func TestFilter(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprint("member-", i)
	}
	eu := map[string]string{"region": "eu", "env": "prod"}
	tests := []struct {
		name      string
		placement *v1alpha1.Placement
		cluster   *v1alpha1.MemberCluster
		want      string // "" when the cluster passes
	}{
		{name: "no placement", cluster: cluster("member-1", eu)},
		{name: "empty placement", placement: &v1alpha1.Placement{}, cluster: cluster("member-1", eu)},
		{name: "listed", placement: &v1alpha1.Placement{ClusterNames: []string{"member-2", "member-1"}}, cluster: cluster("member-1", nil)},
		{name: "not listed", placement: &v1alpha1.Placement{ClusterNames: []string{"member-2"}}, cluster: cluster("member-1", eu),
			want: "not in clusterNames"},
		{name: "listed in a long list", placement: &v1alpha1.Placement{ClusterNames: many}, cluster: cluster("member-39", nil)},
		{name: "not in a long list", placement: &v1alpha1.Placement{ClusterNames: many}, cluster: cluster("member-40", nil),
			want: "not in clusterNames"},
		{name: "selector matches", placement: &v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
			cluster: cluster("member-1", eu)},
		{name: "selector misses", placement: &v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}},
			cluster: cluster("member-1", eu), want: "do not match clusterSelector"},
		{name: "selector expression", placement: &v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}}}}, cluster: cluster("member-1", eu)},
		{name: "empty selector matches all", placement: &v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{}}, cluster: cluster("member-1", nil)},
		{name: "both hold", placement: &v1alpha1.Placement{ClusterNames: []string{"member-1"},
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, cluster: cluster("member-1", eu)},
		{name: "names checked first", placement: &v1alpha1.Placement{ClusterNames: []string{"member-2"},
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, cluster: cluster("member-1", eu),
			want: "not in clusterNames"},
		{name: "listed, selector misses", placement: &v1alpha1.Placement{ClusterNames: []string{"member-1"},
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}, cluster: cluster("member-1", eu),
			want: "do not match clusterSelector"},
	}
	p := &Placement{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &framework.Unit{Key: "default/web", Placement: tt.placement}
			for _, prepared := range []bool{true, false} {
				state := framework.CycleState{}
				if prepared {
					if s := p.Prepare(context.Background(), state, u, nil); !s.IsSuccess() {
						t.Fatalf("Prepare: %s", s.Reason)
					}
				}
				s := p.Filter(context.Background(), state, u, tt.cluster)
				switch {
				case tt.want == "" && !s.IsSuccess():
					t.Errorf("prepared=%v: excluded with %q, want pass", prepared, s.Reason)
				case tt.want != "" && s.IsSuccess():
					t.Errorf("prepared=%v: passed, want %q", prepared, tt.want)
				case tt.want != "" && (s.Code != framework.Unschedulable || s.Reason != tt.want):
					t.Errorf("prepared=%v: got %d %q, want Unschedulable %q", prepared, s.Code, s.Reason, tt.want)
				}
			}
		})
	}
}

func TestPrepareInvalidSelector(t *testing.T) {
	u := &framework.Unit{Placement: &v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "env", Operator: metav1.LabelSelectorOpIn}}}}}
	p := &Placement{}
	s := p.Prepare(context.Background(), framework.CycleState{}, u, nil)
	// The rest of the message is apimachinery's.
	if s.IsSuccess() || s.Code != framework.Error || !strings.HasPrefix(s.Reason, "clusterSelector: ") ||
		!strings.Contains(s.Reason, "values set can't be empty") {
		t.Errorf("Prepare = %+v, want an Error about the selector", s)
	}
	if s := p.Filter(context.Background(), framework.CycleState{}, u, cluster("member-1", nil)); s.IsSuccess() || s.Code != framework.Error {
		t.Errorf("Filter without Prepare = %+v, want Error", s)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(nil); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"clusterNames":["a"]}`)); err == nil {
		t.Error("New accepted arguments")
	}
}
