// Package framework is the scheduler's plugin framework: an object (a
// Unit) passes the Filter, Score, Select and Replicas extension points, each
// made of small plugins registered by name and composed by a profile. It
// records why clusters were left out, so every decision can be explained.
package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// Unit is one object to place.
type Unit struct {
	// Key identifies it (its FederatedObject's namespace/name) and seeds
	// tie-breaks, so equal inputs give equal plans.
	Key string
	// GVK is the object's kind.
	GVK schema.GroupVersionKind
	// Namespace and Name of the object.
	Namespace, Name string
	// Replicas is the object's replica count; nil when it has none.
	Replicas *int32
	// Requests is one replica's resource requests (from its pod template);
	// nil when unknown.
	Requests corev1.ResourceList
	// Placement is the policy's placement, narrowed by the object's own
	// annotations where the policy allows.
	Placement *v1alpha1.Placement
	// Current is the placement in force.
	Current []v1alpha1.ClusterPlacement
	// Limits are clusters' estimated capacities for the object, in
	// replicas, learnt from replicas that stayed Unschedulable there
	// (application failover); a Divide object gets at most that many there.
	Limits map[string]int32
	// Shape is one replica's pod as node-level placement sees it; nil for
	// objects without a pod template.
	Shape *nodefit.Shape
	// Fits are clusters' simulated room for the object's replicas, from
	// their nodes (see Fit). A cluster without an entry has no node-level
	// view (a pull member, a member whose caches are filling): plugins
	// fall back to its status.resources sums. Nil when simulation is off.
	Fits map[string]Fit
}

// Fit is a cluster's simulated room for a unit.
type Fit struct {
	// Replicas is how many of the unit's replicas the cluster can run: its
	// pods already bound there plus how many more fit in the free
	// resources of the nodes that may run them, less what other decisions
	// reserved there (the ledger).
	Replicas int64
	// Reserved is how many replicas' worth of room other decisions hold
	// in the cluster.
	Reserved int64
	// Bound is how many of the unit's own pods are bound to nodes in the
	// cluster (part of Replicas).
	Bound int32
	// Version identifies the member state the fit was read at.
	Version uint64
	// Nodes is the node-level estimate the room comes from.
	Nodes nodefit.Result
}

// Why says what limits the room: "most free on one node: cpu 2".
func (f Fit) Why() string { return f.Nodes.Explain() }

// Explain describes a cluster's fit for a decision's message: "member-2
// fits 3 of 10 (most free on one node: cpu 2)".
func (f Fit) Explain(cluster string, wanted int64) string {
	return fmt.Sprintf("%s fits %d of %d (%s)", cluster, f.Replicas, wanted, f.Limit())
}

// Limit says what limits the room: Why, and the reservations of other
// decisions when there are any.
func (f Fit) Limit() string {
	if f.Reserved > 0 {
		return fmt.Sprintf("%s; %d reserved by other decisions", f.Why(), f.Reserved)
	}
	return f.Why()
}

// Divide reports whether the unit's replicas are split across clusters.
func (u *Unit) Divide() bool {
	return u.Replicas != nil && u.Placement != nil && u.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivide
}

// CurrentReplicas returns a cluster's entry in the current placement.
func (u *Unit) CurrentReplicas(cluster string) (replicas *int32, placed bool) {
	for _, p := range u.Current {
		if p.Cluster == cluster {
			return p.Replicas, true
		}
	}
	return nil, false
}

// Code is a plugin's verdict.
type Code int

// Codes.
const (
	// Success: the cluster passes.
	Success Code = iota
	// Unschedulable: the cluster cannot take the object; Reason says why.
	Unschedulable
	// Error: the plugin failed (a webhook timed out); the decision fails.
	Error
)

// Status is a plugin's verdict; nil means Success.
type Status struct {
	// Code is the verdict.
	Code Code
	// Reason is a short phrase that groups clusters in the explanation:
	// "untolerated taint flotilla.io/unreachable", "does not serve
	// apps.kruise.io/v1alpha1 CloneSet".
	Reason string
	// Plugin is the plugin that gave it, when the plugin says so.
	Plugin string
}

// NewUnschedulable returns an Unschedulable status with a reason.
func NewUnschedulable(format string, args ...any) *Status {
	return &Status{Code: Unschedulable, Reason: fmt.Sprintf(format, args...)}
}

// NewError returns an Error status.
func NewError(err error) *Status { return &Status{Code: Error, Reason: err.Error()} }

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// Plugin is any scheduler plugin.
type Plugin interface {
	// Name is the name profiles refer to.
	Name() string
}

// PointsPlugin is a plugin that serves only some extension points although
// its type implements them all (a webhook with some paths): Build refuses
// it at a point it does not serve.
type PointsPlugin interface {
	Plugin
	Points() (filter, score, sel, replicas bool)
}

// CycleState carries what plugins compute once per decision (parsed
// selectors, totals) to their per-cluster calls.
type CycleState map[string]any

// PreparePlugin runs once per decision, before any extension point.
type PreparePlugin interface {
	Plugin
	Prepare(ctx context.Context, state CycleState, u *Unit, clusters []*v1alpha1.MemberCluster) *Status
}

// FilterPlugin removes the clusters an object cannot go to.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state CycleState, u *Unit, c *v1alpha1.MemberCluster) *Status
}

// BatchFilterPlugin filters every candidate in one call (webhooks): one
// status per cluster, in order.
type BatchFilterPlugin interface {
	Plugin
	FilterAll(ctx context.Context, u *Unit, clusters []*v1alpha1.MemberCluster) ([]*Status, error)
}

// MaxScore is the highest score a plugin gives.
const MaxScore = 100

// ScorePlugin ranks a cluster from 0 to MaxScore.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state CycleState, u *Unit, c *v1alpha1.MemberCluster) (int64, *Status)
}

// BatchScorePlugin scores every candidate in one call (webhooks).
type BatchScorePlugin interface {
	Plugin
	ScoreAll(ctx context.Context, u *Unit, clusters []*v1alpha1.MemberCluster) ([]int64, error)
}

// ScoredCluster is a feasible cluster with its total score.
type ScoredCluster struct {
	// Cluster is the MemberCluster.
	Cluster *v1alpha1.MemberCluster
	// Score is the weighted sum of the score plugins.
	Score int64
}

// SelectPlugin chooses among the feasible clusters, given best first. It
// returns the chosen ones (in the same order) or Unschedulable when no
// choice satisfies it.
type SelectPlugin interface {
	Plugin
	Select(ctx context.Context, state CycleState, u *Unit, ranked []ScoredCluster) ([]ScoredCluster, *Status)
}

// ReplicasPlugin turns the chosen clusters into the placement: each
// cluster's replicas for a Divide unit, the clusters alone otherwise.
type ReplicasPlugin interface {
	Plugin
	Replicas(ctx context.Context, state CycleState, u *Unit, chosen []ScoredCluster) ([]v1alpha1.ClusterPlacement, *Status)
}
