package resourcefit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// list builds a ResourceList from name, quantity pairs.
func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestFilter(t *testing.T) {
	const gpu = "nvidia.com/gpu"
	tests := []struct {
		name      string
		requests  corev1.ResourceList
		available corev1.ResourceList
		placed    bool
		want      string // "" when the cluster passes
	}{
		{name: "requests unknown", available: list("cpu", "0")},
		{name: "fits", requests: list("cpu", "500m", "memory", "1Gi"), available: list("cpu", "2", "memory", "4Gi", "pods", "10")},
		{name: "fits exactly", requests: list("cpu", "500m", "memory", "1Gi"), available: list("cpu", "0.5", "memory", "1024Mi")},
		{name: "cpu short", requests: list("cpu", "500m", "memory", "1Gi"), available: list("cpu", "499m", "memory", "4Gi"),
			want: "insufficient cpu"},
		{name: "memory short", requests: list("cpu", "500m", "memory", "1Gi"), available: list("cpu", "2", "memory", "1000Mi"),
			want: "insufficient memory"},
		{name: "first in name order", requests: list("memory", "1Gi", "cpu", "1", gpu, "1"), available: list("pods", "3"),
			want: "insufficient cpu"},
		{name: "extended resource not reported", requests: list("cpu", "1", gpu, "1"), available: list("cpu", "8", "memory", "8Gi"),
			want: "insufficient " + gpu},
		{name: "extended resource free", requests: list("cpu", "1", gpu, "1"), available: list("cpu", "8", gpu, "2")},
		{name: "nothing reported", requests: list("memory", "1Mi"), want: "insufficient memory"},
		{name: "zero requests need nothing", requests: list("cpu", "0", gpu, "0")},
		{name: "placed: stays", requests: list("cpu", "4"), available: list("cpu", "1"), placed: true},
	}
	p := &ResourceFit{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{Resources: v1alpha1.ResourceSummary{
				Allocatable: tt.available, Available: tt.available}}}
			c.Name = "member-1"
			u := &framework.Unit{Key: "default/web", Requests: tt.requests, Placement: &v1alpha1.Placement{},
				Current: []v1alpha1.ClusterPlacement{{Cluster: "member-2"}}}
			if tt.placed {
				u.Current = append(u.Current, v1alpha1.ClusterPlacement{Cluster: "member-1"})
			}
			for _, prepared := range []bool{true, false} {
				state := framework.CycleState{}
				if prepared {
					p.Prepare(context.Background(), state, u, nil)
				}
				s := p.Filter(context.Background(), state, u, c)
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

func TestNew(t *testing.T) {
	if _, err := New([]byte(" ")); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"resources":["cpu"]}`)); err == nil {
		t.Error("New accepted arguments")
	}
}

func BenchmarkFilter(b *testing.B) {
	c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{Resources: v1alpha1.ResourceSummary{
		Available: list("cpu", "31500m", "memory", "120Gi", "pods", "200", "ephemeral-storage", "500Gi")}}}
	u := &framework.Unit{Requests: list("cpu", "250m", "memory", "512Mi"), Placement: &v1alpha1.Placement{}}
	p := &ResourceFit{}
	state := framework.CycleState{}
	p.Prepare(context.Background(), state, u, nil)
	b.ReportAllocs()
	for b.Loop() {
		for range 100 {
			if !p.Filter(context.Background(), state, u, c).IsSuccess() {
				b.Fatal("excluded")
			}
		}
	}
}

// largest is a node-level estimate whose best node has millicores free.
func largest(millicores int64) nodefit.Result {
	return nodefit.Result{Nodes: 1, Total: 1, Largest: []nodefit.Request{{Name: corev1.ResourceCPU, Amount: millicores}}}
}

func TestFilterSimulated(t *testing.T) {
	// The sums say 100 cpus are free; the nodes' simulation decides.
	roomy := list("cpu", "100", "memory", "400Gi")
	tests := []struct {
		name   string
		fit    *framework.Fit
		placed bool
		want   string
	}{
		{name: "fits on a node", fit: &framework.Fit{Replicas: 1}},
		{name: "no node holds one", fit: &framework.Fit{Nodes: largest(500)},
			want: "no node fits a replica (most free on one node: cpu 500m)"},
		{name: "reserved by other decisions", fit: &framework.Fit{Reserved: 3, Nodes: largest(4000)},
			want: "no node fits a replica (most free on one node: cpu 4; 3 reserved by other decisions)"},
		{name: "placed: stays", fit: &framework.Fit{}, placed: true},
		{name: "no view: the sums", fit: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{Resources: v1alpha1.ResourceSummary{Allocatable: roomy, Available: roomy}}}
			c.Name = "member-1"
			u := &framework.Unit{Key: "default/web", Requests: list("cpu", "4"), Placement: &v1alpha1.Placement{}, Fits: map[string]framework.Fit{}}
			if tt.fit != nil {
				u.Fits["member-1"] = *tt.fit
			}
			if tt.placed {
				u.Current = []v1alpha1.ClusterPlacement{{Cluster: "member-1"}}
			}
			got := ""
			if s := (&ResourceFit{}).Filter(context.Background(), framework.CycleState{}, u, c); !s.IsSuccess() {
				got = s.Reason
			}
			if got != tt.want {
				t.Errorf("Filter = %q, want %q", got, tt.want)
			}
		})
	}
}
