// Package allocation holds the capacity score plugins, which rank clusters
// by their status.resources: LeastAllocated favours the clusters with the
// most free capacity (spreading), MostAllocated the fullest ones
// (packing), BalancedAllocation those whose CPU and memory are used
// evenly.
//
// A cluster that does not report a resource (no or zero allocatable, as
// before its first status or with no schedulable node) gains nothing from
// it: unknown capacity never attracts objects, whichever plugin scores.
package allocation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Plugin names in scheduling profiles.
const (
	LeastAllocatedName     = "LeastAllocated"
	MostAllocatedName      = "MostAllocated"
	BalancedAllocationName = "BalancedAllocation"
)

// Args are LeastAllocated's and MostAllocated's arguments, for example
// {"resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1}]}.
type Args struct {
	// Resources are the resources scored, with their weights; cpu and
	// memory, weight 1 each, when absent.
	Resources []ResourceWeight `json:"resources,omitempty"`
}

// ResourceWeight is a resource and its weight in the score.
type ResourceWeight struct {
	// Name of the resource: cpu, memory, nvidia.com/gpu...
	Name corev1.ResourceName `json:"name"`
	// Weight, 1 to 100; 1 when absent.
	Weight *int32 `json:"weight,omitempty"`
}

// weighted is a validated ResourceWeight.
type weighted struct {
	name   corev1.ResourceName
	weight float64
}

// resources is a validated resource list and the sum of its weights.
type resources struct {
	list  []weighted
	total float64
}

// defaults are the resources scored without arguments.
var defaults = resources{
	list:  []weighted{{name: corev1.ResourceCPU, weight: 1}, {name: corev1.ResourceMemory, weight: 1}},
	total: 2,
}

// parseArgs decodes and checks Args.
func parseArgs(args []byte) (resources, error) {
	var a Args
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return resources{}, fmt.Errorf("invalid arguments: %w", err)
		}
		if dec.More() {
			return resources{}, fmt.Errorf("invalid arguments: data after the JSON object")
		}
	}
	if a.Resources == nil {
		return defaults, nil
	}
	if len(a.Resources) == 0 {
		return resources{}, fmt.Errorf("resources must list at least one resource")
	}
	rs := resources{list: make([]weighted, len(a.Resources))}
	seen := map[corev1.ResourceName]bool{}
	for i, r := range a.Resources {
		w := int32(1)
		if r.Weight != nil {
			w = *r.Weight
		}
		switch {
		case r.Name == "":
			return resources{}, fmt.Errorf("resources[%d]: name is required", i)
		case seen[r.Name]:
			return resources{}, fmt.Errorf("resources[%d]: %s is listed twice", i, r.Name)
		case w < 1 || w > 100:
			return resources{}, fmt.Errorf("resources[%d]: weight %d of %s is not within 1 to 100", i, w, r.Name)
		}
		seen[r.Name] = true
		rs.list[i] = weighted{name: r.Name, weight: float64(w)}
		rs.total += float64(w)
	}
	return rs, nil
}

// LeastAllocated scores a cluster by its free capacity: the weighted
// average over the resources of available/allocatable, times MaxScore
// (rounded). A resource the cluster does not report adds 0.
type LeastAllocated struct{ resources resources }

// MostAllocated scores a cluster by its used capacity: the weighted
// average over the resources of 1 − available/allocatable, times MaxScore
// (rounded). A resource the cluster does not report adds 0, so an empty
// cluster and one that reports nothing both score 0.
type MostAllocated struct{ resources resources }

// BalancedAllocation scores a cluster by how evenly its CPU and memory are
// used: MaxScore × (1 − |cpu used − memory used|), each as a fraction of
// allocatable (used = allocatable − available), rounded. A cluster that
// does not report both scores 0.
type BalancedAllocation struct{}

var (
	_ framework.ScorePlugin = (*LeastAllocated)(nil)
	_ framework.ScorePlugin = (*MostAllocated)(nil)
	_ framework.ScorePlugin = (*BalancedAllocation)(nil)
)

// NewLeastAllocated builds LeastAllocated from Args.
func NewLeastAllocated(args []byte) (framework.Plugin, error) {
	rs, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	return &LeastAllocated{resources: rs}, nil
}

// NewMostAllocated builds MostAllocated from Args.
func NewMostAllocated(args []byte) (framework.Plugin, error) {
	rs, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	return &MostAllocated{resources: rs}, nil
}

// NewBalancedAllocation builds BalancedAllocation. It takes no arguments.
func NewBalancedAllocation(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &BalancedAllocation{}, nil
}

// Name returns LeastAllocatedName.
func (*LeastAllocated) Name() string { return LeastAllocatedName }

// Name returns MostAllocatedName.
func (*MostAllocated) Name() string { return MostAllocatedName }

// Name returns BalancedAllocationName.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

// Score is the cluster's weighted free share, 0..MaxScore.
func (p *LeastAllocated) Score(_ context.Context, _ framework.CycleState, _ *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	return p.resources.score(c, false), nil
}

// Score is the cluster's weighted used share, 0..MaxScore.
func (p *MostAllocated) Score(_ context.Context, _ framework.CycleState, _ *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	return p.resources.score(c, true), nil
}

// Score is MaxScore less the gap between the cluster's CPU and memory
// usage.
func (*BalancedAllocation) Score(_ context.Context, _ framework.CycleState, _ *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	cpu, ok := free(c, corev1.ResourceCPU)
	if !ok {
		return 0, nil
	}
	mem, ok := free(c, corev1.ResourceMemory)
	if !ok {
		return 0, nil
	}
	return percent(1 - math.Abs(cpu-mem)), nil
}

// score is the weighted average of the free (or, with used, the used)
// shares of the resources.
func (rs *resources) score(c *v1alpha1.MemberCluster, used bool) int64 {
	var sum float64
	for _, r := range rs.list {
		f, ok := free(c, r.name)
		switch {
		case !ok:
		case used:
			sum += r.weight * (1 - f)
		default:
			sum += r.weight * f
		}
	}
	return percent(sum / rs.total)
}

// free returns the share of a resource's allocatable amount that is
// available, within 0..1; false when the cluster reports no allocatable
// amount of it. A missing available amount counts as none.
func free(c *v1alpha1.MemberCluster, name corev1.ResourceName) (float64, bool) {
	alloc, ok := c.Status.Resources.Allocatable[name]
	if !ok {
		return 0, false
	}
	total := alloc.AsApproximateFloat64()
	if total <= 0 {
		return 0, false
	}
	avail := c.Status.Resources.Available[name]
	return min(max(avail.AsApproximateFloat64()/total, 0), 1), true
}

// percent scales a 0..1 share to 0..MaxScore, rounded.
func percent(share float64) int64 {
	return int64(math.Round(share * framework.MaxScore))
}
