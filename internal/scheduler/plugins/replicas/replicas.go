// Package replicas is the Replicas plugin: it turns the chosen clusters
// into the placement, splitting a Divide object's replicas.
//
// A Duplicate object (or one without replicas) goes to every chosen cluster
// whole. A Divide object's replicas are split by weights within each
// cluster's minReplicas and maxReplicas (from placement.replicaScheduling
// weights, in every weight mode):
//
//   - Static: the listed weights. With none listed every chosen cluster
//     weighs 1; otherwise a chosen cluster without an entry (or with weight
//     0 and no minReplicas) gets nothing, not even what capped clusters
//     cannot hold, except that with avoidDisruption one that runs
//     replicas keeps them (no share; it shrinks first).
//   - WaterLevel: weights from each cluster's free room in the object's
//     main resource (cpu when a replica requests cpu, else memory, else
//     pods): R_i = min(A_i/ΣA, cap·T_i/ΣT), normalised, where T is
//     allocatable, A available and cap waterLevelCapPercent/100 (default
//     1.4). Listed weights only contribute their limits. What clusters with
//     weight left cannot hold (their maxReplicas) goes evenly to the full
//     ones.
//   - Binpack: the chosen clusters are filled best-ranked first, each up to
//     the replicas its available main resource fits (pods available when a
//     replica requests neither cpu nor memory) and its maxReplicas, after
//     every cluster's minReplicas. Replicas that fit nowhere are spread
//     evenly over the clusters still below their maxReplicas.
//
// For WaterLevel and Binpack, a cluster's available amount counts the
// object's own current replicas there as free (their requests times the
// count, at most allocatable), so a plan does not drift away from itself
// once its replicas run.
//
// A chosen cluster with a NoSchedule taint the object does not tolerate
// keeps at most the replicas it holds, and one with a capacity limit
// (Unit.Limits, application failover) gets at most the limit, unless the
// other clusters cannot hold the rest: that goes evenly to the limited
// clusters (where it waits to be scheduled) rather than nowhere. With avoidDisruption (the default)
// the split is reached from the current one without moving running
// replicas because weights changed (see replicas.AvoidDisruption): the
// current counts, clamped to each cluster's limits, are the starting point;
// a cluster that is no longer chosen starts at 0, so its replicas are the
// ones placed elsewhere. The plan never exceeds a cluster's maxReplicas.
//
// With a total of 0 every weighted cluster is placed with 0 replicas;
// otherwise clusters that get none are left out. Equal inputs give equal
// plans: ties go by a hash of the object's key and the cluster names.
package replicas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	planner "github.com/flotilla-io/flotilla/internal/scheduler/replicas"
)

// Name is the plugin's name in profiles.
const Name = "Replicas"

// Args are the plugin's arguments.
type Args struct {
	// DefaultWaterLevelCapPercent is the WaterLevel cap, in percent of a
	// cluster's share of total capacity, for policies that set no
	// waterLevelCapPercent: 100 to 1000, default 140.
	DefaultWaterLevelCapPercent *int32 `json:"defaultWaterLevelCapPercent,omitempty"`
	// NodeEstimates says whether the members' node-level estimates (simulated
	// scheduling) give their room where they exist (default true); false
	// judges every member by its status.resources sums.
	NodeEstimates *bool `json:"nodeEstimates,omitempty"`
}

// Plugin plans the placement of the chosen clusters.
type Plugin struct {
	defaultCap float64
	estimates  bool
}

var _ framework.ReplicasPlugin = (*Plugin)(nil)

// New builds the plugin from Args in JSON; empty or null args give the
// defaults, unknown fields and out-of-range values are errors.
func New(args []byte) (framework.Plugin, error) {
	p := &Plugin{defaultCap: planner.DefaultWaterLevelCap, estimates: true}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return p, nil
	}
	var a Args
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%s: invalid arguments: %w", Name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: invalid arguments: data after the JSON object", Name)
	}
	if v := a.DefaultWaterLevelCapPercent; v != nil {
		if *v < 100 || *v > 1000 {
			return nil, fmt.Errorf("%s: defaultWaterLevelCapPercent %d is outside 100 to 1000", Name, *v)
		}
		p.defaultCap = float64(*v) / 100
	}
	if a.NodeEstimates != nil {
		p.estimates = *a.NodeEstimates
	}
	return p, nil
}

// Name returns "Replicas".
func (*Plugin) Name() string { return Name }

// Replicas returns the placement: the chosen clusters, with their replicas
// for a Divide object.
func (p *Plugin) Replicas(ctx context.Context, state framework.CycleState, u *framework.Unit, chosen []framework.ScoredCluster) ([]v1alpha1.ClusterPlacement, *framework.Status) {
	if u.Placement == nil || !u.Divide() {
		out := make([]v1alpha1.ClusterPlacement, len(chosen))
		for i, c := range chosen {
			out[i].Cluster = c.Cluster.Name
		}
		return out, nil
	}
	rs := &u.Placement.ReplicaScheduling
	mode := rs.WeightMode
	switch mode {
	case "", v1alpha1.WeightStatic, v1alpha1.WeightWaterLevel, v1alpha1.WeightBinpack:
	default:
		return nil, framework.NewUnschedulable("unknown weightMode %q", mode)
	}
	total := max(int64(*u.Replicas), 0)
	current, counted := held(u)
	ts := targets(ctx, u, chosen, current, p.estimates)
	if len(ts) == 0 {
		if total == 0 {
			return []v1alpha1.ClusterPlacement{}, nil
		}
		if len(chosen) == 0 {
			return nil, framework.NewUnschedulable("no cluster chosen for %d replicas", total)
		}
		return nil, framework.NewUnschedulable("none of the %d chosen clusters has a replica weight", len(chosen))
	}
	// With simulated room, no cluster is planned beyond what its nodes
	// hold; what fits nowhere gathers in one cluster below (gather).
	maxima := capToFit(ts)
	var plan []int64
	switch mode {
	case v1alpha1.WeightWaterLevel:
		plan = p.waterLevel(total, ts, rs, u.Key)
	case v1alpha1.WeightBinpack:
		plan = binpack(total, ts, u.Key, maxima == nil)
	default:
		if st := zeroWeights(total, ts, rs); st != nil {
			return nil, st
		}
		plan = planner.Split(total, plain(ts), u.Key)
	}
	if maxima != nil {
		gather(total-sum(plan), plan, ts, maxima)
		for i := range ts {
			ts[i].Max = maxima[i]
		}
	}
	if ptr.Deref(rs.AvoidDisruption, true) && counted {
		plan = keep(plan, ts, u.Key)
	}
	if left := total - sum(plan); left > 0 {
		overLimits(left, plan, ts, u.Key)
	}
	if placed := sum(plan); placed < total && placed > 0 {
		// Placed where nothing can take them (a failed cluster's share
		// while the others are cordoned): say so, or the decision reads
		// as complete.
		framework.Note(state, "%d of %d replicas placed: no chosen cluster can take the other %d (maxReplicas, NoSchedule taints)", placed, total, total-placed)
	}
	out := make([]v1alpha1.ClusterPlacement, 0, len(ts))
	counts := make([]int32, len(ts)) // one allocation for every Replicas pointer
	for i, t := range ts {
		if plan[i] == 0 && total > 0 {
			continue
		}
		counts[i] = int32(plan[i])
		out = append(out, v1alpha1.ClusterPlacement{Cluster: t.Name, Replicas: &counts[i]})
	}
	if len(out) == 0 {
		return nil, framework.NewUnschedulable("no chosen cluster can take any of %d replicas (maxReplicas, NoSchedule taints)", total)
	}
	return out, nil
}

// zeroWeights refuses a Static split whose listed weights are all 0 while
// the total is above the minimums: a weight-0 cluster gets its minimum and
// nothing more, so nobody may take the rest. (The planner would weigh
// all-zero targets equally, giving a weight-0 cluster a share only because
// it has a minimum.) The placement in force stays, and the message says
// why.
func zeroWeights(total int64, ts []target, rs *v1alpha1.ReplicaScheduling) *framework.Status {
	if len(rs.Weights) == 0 {
		return nil
	}
	var mins int64
	for _, t := range ts {
		if t.Weight > 0 {
			return nil
		}
		mins += t.Min
	}
	if total <= mins {
		return nil
	}
	return framework.NewUnschedulable("no chosen cluster has a positive weight for the %d replicas above the minimums (a weight-0 cluster gets its minReplicas and nothing more)", total-mins)
}

// held returns the current replicas per cluster, and whether the current
// placement has replica counts at all.
func held(u *framework.Unit) (map[string]int64, bool) {
	m := make(map[string]int64, len(u.Current))
	counted := false
	for _, c := range u.Current {
		if c.Replicas != nil {
			m[c.Cluster] = int64(max(*c.Replicas, 0))
			counted = true
		}
	}
	return m, counted
}
