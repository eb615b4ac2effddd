package replicas

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	planner "github.com/flotilla-io/flotilla/internal/scheduler/replicas"
	clusterroom "github.com/flotilla-io/flotilla/internal/scheduler/room"
)

// target is a chosen cluster that may get replicas.
type target struct {
	planner.Target
	// held is what the cluster runs now (0 when not placed).
	held int64
	// room is the cluster's allocatable and available main resource, its
	// own replicas' share counted as available (WaterLevel and Binpack).
	room planner.Capacity
	// fit is how many replicas the available amount holds (Binpack).
	fit int64
	// limited says that a capacity limit lowered Max; beyond is the Max
	// without it.
	limited bool
	beyond  int64
	// simulated says room and fit come from the cluster's nodes
	// (Unit.Fits); elastic that its nodes can grow (room.Elastic), by
	// headroom nodes.
	simulated, elastic bool
	headroom           int64
}

// targets turns the chosen clusters into targets, in chosen order. With
// estimates, the node-level fits (Unit.Fits) give room and fit where a
// cluster has one: in WaterLevel and Binpack, and in Static without listed
// weights (an even split that no member's nodes can hold is capped).
func targets(ctx context.Context, u *framework.Unit, chosen []framework.ScoredCluster, current map[string]int64, estimates bool) []target {
	rs := &u.Placement.ReplicaScheduling
	static := rs.WeightMode == "" || rs.WeightMode == v1alpha1.WeightStatic
	// A weight dropped to 0 does not move running replicas while
	// avoidDisruption is on: the cluster stays a target without a share,
	// keeps what it runs and shrinks first (replicas.AvoidDisruption).
	keepHeld := ptr.Deref(rs.AvoidDisruption, true)
	var listed map[string]*v1alpha1.ClusterWeight
	if len(rs.Weights) > 0 {
		listed = make(map[string]*v1alpha1.ClusterWeight, len(rs.Weights))
		for i := range rs.Weights {
			listed[rs.Weights[i].Cluster] = &rs.Weights[i]
		}
	}
	res, per := mainResource(u.Requests)
	logger := klog.FromContext(ctx)
	out := make([]target, 0, len(chosen))
	for _, sc := range chosen {
		c := sc.Cluster
		t := target{Target: planner.Target{Name: c.Name, Weight: 1, Max: planner.NoMax}, held: current[c.Name]}
		w, ok := listed[c.Name]
		if ok {
			if w.MinReplicas != nil {
				t.Min = int64(max(*w.MinReplicas, 0))
			}
			if w.MaxReplicas != nil {
				t.Max = int64(max(*w.MaxReplicas, 0))
			}
		}
		if static && listed != nil {
			t.Weight = 0
			if ok {
				t.Weight = float64(max(w.Weight, 0))
			}
			if t.Weight == 0 && t.Min == 0 && !(keepHeld && t.held > 0) {
				continue // unlisted or weight 0: no replicas
			}
		}
		if noNewReplicas(logger, c, u.Placement.Tolerations) && (t.Max < 0 || t.Max > t.held) {
			t.Max = t.held // keeps what it has, gets no more
		}
		if limit, ok := u.Limits[c.Name]; ok && (t.Max < 0 || t.Max > int64(limit)) {
			t.limited, t.beyond = true, t.Max
			t.Max = int64(limit) // what the cluster was seen to run
		}
		if t.Max >= 0 && t.Min > t.Max {
			t.Min = t.Max
		}
		f, fitted := u.Fits[c.Name]
		fitted = fitted && estimates
		switch {
		case fitted && (!static || listed == nil):
			t.room, t.fit, t.simulated = simulated(c, res, per, f), f.Replicas, true
		case !static:
			t.room, t.fit = capacity(c, res, per, t.held)
		}
		t.elastic, t.headroom = clusterroom.Elastic(c)
		out = append(out, t)
	}
	return out
}

// plain returns the planner targets of ts.
func plain(ts []target) []planner.Target {
	out := make([]planner.Target, len(ts))
	for i := range ts {
		out[i] = ts[i].Target
	}
	return out
}

// mainResource returns the resource dynamic weights look at and one
// replica's request of it: cpu (in millicores) when requested, else memory
// (bytes), else pods (one per replica).
func mainResource(requests corev1.ResourceList) (corev1.ResourceName, int64) {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := requests[r]; ok {
			if v := amount(r, q); v > 0 {
				return r, v
			}
		}
	}
	return corev1.ResourcePods, 1
}

// amount is q as an integer: millicores for cpu, whole units otherwise.
func amount(r corev1.ResourceName, q resource.Quantity) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// capacity returns a cluster's room in resource r, counting what its held
// replicas request as available (never above allocatable), and how many
// replicas of per each fit in it.
func capacity(c *v1alpha1.MemberCluster, r corev1.ResourceName, per, held int64) (planner.Capacity, int64) {
	total := amount(r, c.Status.Resources.Allocatable[r])
	avail := max(amount(r, c.Status.Resources.Available[r]), 0) + held*per
	if total > 0 {
		avail = min(avail, total)
	}
	return planner.Capacity{Total: float64(total), Available: float64(avail)}, avail / per
}

// simulated returns a cluster's room in resource r from its simulated fit:
// the replicas that fit, in r, never above allocatable.
func simulated(c *v1alpha1.MemberCluster, r corev1.ResourceName, per int64, f framework.Fit) planner.Capacity {
	total := amount(r, c.Status.Resources.Allocatable[r])
	avail := max(f.Replicas, 0) * per
	if total > 0 {
		avail = min(avail, total)
	}
	return planner.Capacity{Total: float64(total), Available: float64(avail)}
}

// noNewReplicas reports whether c has a NoSchedule taint that tolerations
// do not tolerate.
func noNewReplicas(logger klog.Logger, c *v1alpha1.MemberCluster, tolerations []corev1.Toleration) bool {
	for i := range c.Spec.Taints {
		taint := &c.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule {
			continue
		}
		tolerated := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logger, taint, true) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return true
		}
	}
	return false
}
