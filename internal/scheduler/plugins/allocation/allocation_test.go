package allocation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// list builds a ResourceList from name, quantity pairs.
func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func cluster(allocatable, available corev1.ResourceList) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{Resources: v1alpha1.ResourceSummary{
		Allocatable: allocatable, Available: available}}}
	c.Name = "member-1"
	return c
}

func score(t *testing.T, f framework.Factory, args string, c *v1alpha1.MemberCluster) int64 {
	t.Helper()
	var raw []byte
	if args != "" {
		raw = []byte(args)
	}
	p, err := f(raw)
	if err != nil {
		t.Fatalf("factory: %v", err)
	}
	u := &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{}}
	got, s := p.(framework.ScorePlugin).Score(context.Background(), framework.CycleState{}, u, c)
	if !s.IsSuccess() {
		t.Fatalf("Score: %s", s.Reason)
	}
	return got
}

func TestScores(t *testing.T) {
	const gpuArgs = `{"resources":[{"name":"nvidia.com/gpu","weight":2},{"name":"cpu"}]}`
	tests := []struct {
		name                  string
		cluster               *v1alpha1.MemberCluster
		args                  string // LeastAllocated's and MostAllocated's
		least, most, balanced int64
	}{
		{name: "partly used", cluster: cluster(list("cpu", "10", "memory", "100Gi"), list("cpu", "4", "memory", "80Gi")),
			least: 60, most: 40, balanced: 60},
		{name: "empty", cluster: cluster(list("cpu", "10", "memory", "100Gi"), list("cpu", "10", "memory", "100Gi")),
			least: 100, most: 0, balanced: 100},
		{name: "full", cluster: cluster(list("cpu", "10", "memory", "100Gi"), list("cpu", "0", "memory", "0")),
			least: 0, most: 100, balanced: 100},
		{name: "nothing reported", cluster: cluster(nil, nil), least: 0, most: 0, balanced: 0},
		{name: "memory not reported", cluster: cluster(list("cpu", "10"), list("cpu", "5")), least: 25, most: 25, balanced: 0},
		{name: "zero allocatable counts as not reported", cluster: cluster(list("cpu", "0", "memory", "8Gi"), list("cpu", "0", "memory", "8Gi")),
			least: 50, most: 0, balanced: 0},
		{name: "available missing counts as none", cluster: cluster(list("cpu", "10", "memory", "10Gi"), list("cpu", "10")),
			least: 50, most: 50, balanced: 0},
		{name: "available above allocatable capped", cluster: cluster(list("cpu", "1", "memory", "1Gi"), list("cpu", "2", "memory", "1Gi")),
			least: 100, most: 0, balanced: 100},
		{name: "milli and binary units", cluster: cluster(list("cpu", "3500m", "memory", "4Gi"), list("cpu", "700m", "memory", "1024Mi")),
			least: 23, most: 78, balanced: 95},
		{name: "rounded", cluster: cluster(list("cpu", "3", "memory", "3Gi"), list("cpu", "1", "memory", "1Gi")),
			least: 33, most: 67, balanced: 100},
		{name: "weighted resources", args: gpuArgs,
			cluster: cluster(list("cpu", "10", "memory", "10Gi", "nvidia.com/gpu", "4"), list("cpu", "4", "memory", "10Gi", "nvidia.com/gpu", "1")),
			least:   30, most: 70, balanced: 40},
		{name: "weighted resource not reported", args: gpuArgs,
			cluster: cluster(list("cpu", "10", "memory", "10Gi"), list("cpu", "4", "memory", "10Gi")),
			least:   13, most: 20, balanced: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := score(t, NewLeastAllocated, tt.args, tt.cluster); got != tt.least {
				t.Errorf("LeastAllocated = %d, want %d", got, tt.least)
			}
			if got := score(t, NewMostAllocated, tt.args, tt.cluster); got != tt.most {
				t.Errorf("MostAllocated = %d, want %d", got, tt.most)
			}
			if got := score(t, NewBalancedAllocation, "", tt.cluster); got != tt.balanced {
				t.Errorf("BalancedAllocation = %d, want %d", got, tt.balanced)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	valid := []string{"", "null", "{}", `{"resources":null}`, `{"resources":[{"name":"cpu","weight":100}]}`,
		`{"resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1}]}`}
	for _, args := range valid {
		for _, f := range []framework.Factory{NewLeastAllocated, NewMostAllocated} {
			if _, err := f([]byte(args)); err != nil {
				t.Errorf("%q: %v", args, err)
			}
		}
	}
	invalid := map[string]string{
		`{"resources":[]}`:                               "resources must list at least one resource",
		`{"resources":[{"weight":1}]}`:                   "resources[0]: name is required",
		`{"resources":[{"name":"cpu"},{"name":"cpu"}]}`:  "resources[1]: cpu is listed twice",
		`{"resources":[{"name":"cpu","weight":0}]}`:      "resources[0]: weight 0 of cpu is not within 1 to 100",
		`{"resources":[{"name":"memory","weight":101}]}`: "resources[0]: weight 101 of memory is not within 1 to 100",
		`{"resource":[{"name":"cpu"}]}`:                  `invalid arguments: json: unknown field "resource"`,
		`{"resources":[{"name":"cpu","wieght":2}]}`:      `invalid arguments: json: unknown field "wieght"`,
		`{"resources":"cpu"}`:                            "invalid arguments: json: cannot unmarshal string into Go struct field Args.resources of type []allocation.ResourceWeight",
		`{} {}`:                                          "invalid arguments: data after the JSON object",
	}
	for args, want := range invalid {
		for _, f := range []framework.Factory{NewLeastAllocated, NewMostAllocated} {
			if _, err := f([]byte(args)); err == nil || err.Error() != want {
				t.Errorf("%s: got %v, want %q", args, err, want)
			}
		}
	}
	if _, err := NewBalancedAllocation([]byte("{}")); err != nil {
		t.Error(err)
	}
	if _, err := NewBalancedAllocation([]byte(`{"resources":[{"name":"cpu"}]}`)); err == nil {
		t.Error("BalancedAllocation accepted arguments")
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		f    framework.Factory
		want string
	}{{NewLeastAllocated, "LeastAllocated"}, {NewMostAllocated, "MostAllocated"}, {NewBalancedAllocation, "BalancedAllocation"}} {
		p, err := tt.f(nil)
		if err != nil || p.Name() != tt.want {
			t.Errorf("got %v, %v; want %s", p, err, tt.want)
		}
	}
}

// BenchmarkScore scores 100 clusters with each plugin.
func BenchmarkScore(b *testing.B) {
	c := cluster(list("cpu", "64", "memory", "256Gi", "pods", "1100"), list("cpu", "31500m", "memory", "120Gi", "pods", "900"))
	u := &framework.Unit{Placement: &v1alpha1.Placement{}}
	ctx := context.Background()
	for _, f := range []framework.Factory{NewLeastAllocated, NewMostAllocated, NewBalancedAllocation} {
		p, _ := f(nil)
		s := p.(framework.ScorePlugin)
		b.Run(p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for range 100 {
					s.Score(ctx, nil, u, c)
				}
			}
		})
	}
}
