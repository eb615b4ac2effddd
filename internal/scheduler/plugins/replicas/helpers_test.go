package replicas

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

type opt func(*v1alpha1.MemberCluster)

// room sets a cluster's allocatable and available amount of r.
func room(r corev1.ResourceName, allocatable, available string) opt {
	return func(c *v1alpha1.MemberCluster) {
		s := &c.Status.Resources
		if s.Allocatable == nil {
			s.Allocatable, s.Available = corev1.ResourceList{}, corev1.ResourceList{}
		}
		s.Allocatable[r] = resource.MustParse(allocatable)
		s.Available[r] = resource.MustParse(available)
	}
}

func cpu(allocatable, available string) opt { return room(corev1.ResourceCPU, allocatable, available) }

func taint(key string, effect corev1.TaintEffect) opt {
	return func(c *v1alpha1.MemberCluster) {
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	}
}

func mc(name string, opts ...opt) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name = name
	for _, o := range opts {
		o(c)
	}
	return c
}

// ranked returns clusters best first.
func ranked(cs ...*v1alpha1.MemberCluster) []framework.ScoredCluster {
	out := make([]framework.ScoredCluster, len(cs))
	for i, c := range cs {
		out[i] = framework.ScoredCluster{Cluster: c, Score: int64(len(cs) - i)}
	}
	return out
}

// abc is three clusters without status.
func abc() []framework.ScoredCluster { return ranked(mc("A"), mc("B"), mc("C")) }

type unitOpt func(*framework.Unit)

// divide is a Divide unit of total replicas.
func divide(total int32, opts ...unitOpt) *framework.Unit {
	u := &framework.Unit{Key: "ns/web", Replicas: ptr.To(total), Placement: &v1alpha1.Placement{
		ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}
	for _, o := range opts {
		o(u)
	}
	return u
}

// current sets the placement in force from "A=15" terms ("A" alone: no
// replica count).
func current(terms ...string) unitOpt {
	return func(u *framework.Unit) {
		for _, t := range terms {
			name, n, ok := strings.Cut(t, "=")
			p := v1alpha1.ClusterPlacement{Cluster: name}
			if ok {
				var v int32
				fmt.Sscan(n, &v)
				p.Replicas = ptr.To(v)
			}
			u.Current = append(u.Current, p)
		}
	}
}

func weights(ws ...v1alpha1.ClusterWeight) unitOpt {
	return func(u *framework.Unit) { u.Placement.ReplicaScheduling.Weights = ws }
}

func w(cluster string, weight int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: cluster, Weight: weight}
}

func wMin(cluster string, weight, minR int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: cluster, Weight: weight, MinReplicas: ptr.To(minR)}
}

func wMax(cluster string, weight, maxR int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: cluster, Weight: weight, MaxReplicas: ptr.To(maxR)}
}

func mode(m v1alpha1.WeightMode) unitOpt {
	return func(u *framework.Unit) { u.Placement.ReplicaScheduling.WeightMode = m }
}

func capPercent(p int32) unitOpt {
	return func(u *framework.Unit) { u.Placement.ReplicaScheduling.WaterLevelCapPercent = ptr.To(p) }
}

func avoid(on bool) unitOpt {
	return func(u *framework.Unit) { u.Placement.ReplicaScheduling.AvoidDisruption = ptr.To(on) }
}

func requests(kv ...string) unitOpt {
	return func(u *framework.Unit) {
		u.Requests = corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			u.Requests[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func limit(cluster string, n int32) unitOpt {
	return func(u *framework.Unit) {
		if u.Limits == nil {
			u.Limits = map[string]int32{}
		}
		u.Limits[cluster] = n
	}
}

func tolerate(t corev1.Toleration) unitOpt {
	return func(u *framework.Unit) { u.Placement.Tolerations = append(u.Placement.Tolerations, t) }
}

// plan runs the plugin and returns replicas per cluster (-1 for none).
func plan(t *testing.T, u *framework.Unit, chosen []framework.ScoredCluster) map[string]int32 {
	t.Helper()
	got, st := schedule(t, u, chosen)
	if !st.IsSuccess() {
		t.Fatalf("status %+v", st)
	}
	return got
}

func schedule(t *testing.T, u *framework.Unit, chosen []framework.ScoredCluster) (map[string]int32, *framework.Status) {
	t.Helper()
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	placement, st := p.(framework.ReplicasPlugin).Replicas(context.Background(), framework.CycleState{}, u, chosen)
	out := map[string]int32{}
	for _, c := range placement {
		if _, dup := out[c.Cluster]; dup {
			t.Fatalf("cluster %s placed twice: %v", c.Cluster, placement)
		}
		out[c.Cluster] = ptr.Deref(c.Replicas, -1)
	}
	return out, st
}

// m builds an expected plan from "A=5" terms.
func m(terms ...string) map[string]int32 {
	out := map[string]int32{}
	for _, t := range terms {
		name, n, _ := strings.Cut(t, "=")
		var v int32
		fmt.Sscan(n, &v)
		out[name] = v
	}
	return out
}

func show(p map[string]int32) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, p[k]))
	}
	return strings.Join(parts, " ")
}

// planCase is one table row: a unit on chosen clusters and the plan
// wanted, exactly (want) or by a check.
type planCase struct {
	name   string
	unit   *framework.Unit
	chosen []framework.ScoredCluster
	want   map[string]int32
	check  func(map[string]int32) bool
	reason string
}

func runCases(t *testing.T, tests []planCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := schedule(t, tt.unit, tt.chosen)
			switch {
			case tt.reason != "":
				if st.IsSuccess() || st.Code != framework.Unschedulable || st.Reason != tt.reason {
					t.Fatalf("status %+v, want Unschedulable %q", st, tt.reason)
				}
			case !st.IsSuccess():
				t.Fatalf("status %+v", st)
			case tt.check != nil:
				if !tt.check(got) {
					t.Errorf("plan %s fails the check", show(got))
				}
			case !maps.Equal(got, tt.want):
				t.Errorf("plan %s, want %s", show(got), show(tt.want))
			}
		})
	}
}
