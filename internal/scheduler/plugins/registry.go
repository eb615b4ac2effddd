// Package plugins registers Flotilla's in-tree scheduler plugins (each in
// its own subpackage) and names the default profile.
package plugins

import (
	"sort"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/allocation"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/apienablement"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusteraffinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusterpriority"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/clusterready"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/groups"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/maxclusters"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/placement"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/replicas"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/resourcefit"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/spread"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/tainttoleration"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/terminating"
)

// Registry returns the in-tree plugins by name.
func Registry() framework.Registry {
	return framework.Registry{
		apienablement.Name:                apienablement.New,
		tainttoleration.Name:              tainttoleration.New,
		clusteraffinity.Name:              clusteraffinity.New,
		placement.Name:                    placement.New,
		clusterready.Name:                 clusterready.New,
		terminating.Name:                  terminating.New,
		resourcefit.Name:                  resourcefit.New,
		allocation.LeastAllocatedName:     allocation.NewLeastAllocated,
		allocation.MostAllocatedName:      allocation.NewMostAllocated,
		allocation.BalancedAllocationName: allocation.NewBalancedAllocation,
		clusterpriority.Name:              clusterpriority.New,
		maxclusters.Name:                  maxclusters.New,
		groups.Name:                       groups.New,
		spread.Name:                       spread.New,
		replicas.Name:                     replicas.New,
	}
}

// Defaults is the default profile: every filter that expresses the policy
// and the clusters' state, affinity and taint preferences plus free room
// for scoring, groups (two-level placement), spread then maxClusters for
// selection, and the Replicas planner.
func Defaults() framework.Defaults {
	return framework.Defaults{
		Filter:   []string{terminating.Name, placement.Name, apienablement.Name, tainttoleration.Name, clusteraffinity.Name, clusterready.Name},
		Score:    []string{clusteraffinity.Name, tainttoleration.Name, allocation.LeastAllocatedName},
		Select:   []string{groups.Name, spread.Name, maxclusters.Name},
		Replicas: replicas.Name,
		Weights:  map[string]int32{clusteraffinity.Name: 2},
	}
}

// Names returns the in-tree plugin names, sorted.
func Names() []string {
	var out []string
	for n := range Registry() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
