package terminating

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		deletion *metav1.Time
		placed   bool
		pass     bool
	}{
		{name: "live", pass: true},
		{name: "live, placed", placed: true, pass: true},
		{name: "being deleted", deletion: &metav1.Time{Time: time.Now()}},
		{name: "being deleted, placed", deletion: &metav1.Time{Time: time.Now()}, placed: true},
	}
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(framework.FilterPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.MemberCluster{}
			c.Name, c.DeletionTimestamp = "member-1", tt.deletion
			u := &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{}}
			if tt.placed {
				u.Current = []v1alpha1.ClusterPlacement{{Cluster: "member-1"}}
			}
			s := f.Filter(context.Background(), framework.CycleState{}, u, c)
			switch {
			case tt.pass && !s.IsSuccess():
				t.Errorf("excluded with %q", s.Reason)
			case !tt.pass && (s.IsSuccess() || s.Code != framework.Unschedulable || s.Reason != "being deleted"):
				t.Errorf("got %+v, want Unschedulable %q", s, "being deleted")
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New([]byte("{}")); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"x":true}`)); err == nil {
		t.Error("New accepted arguments")
	}
}
