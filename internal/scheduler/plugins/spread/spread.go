// Package spread is the Spread select plugin: it bounds how many distinct
// values of a cluster label (region, zone, provider...) the chosen
// clusters cover, per placement.spreadConstraints.
//
// For each constraint, in order, clusters without the constraint's label
// are dropped (they cannot be counted), the rest are grouped by the label's
// value, and groups are taken in the order of their best-ranked cluster:
// every cluster of the first maxGroups groups is kept (all groups when
// maxGroups is unset). Fewer groups than minGroups (default 1) is
// Unschedulable: "spread over topology.kubernetes.io/region needs 2
// groups, 1 available".
//
// Spread does not cap the number of clusters: in the default profile
// MaxClusters runs after it and, when spread constraints are set, picks
// the best cluster of each group before the rest, so maxClusters and
// minGroups can hold together.
package spread

import (
	"context"
	"fmt"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "Spread"

// Plugin applies placement.spreadConstraints.
type Plugin struct{}

var _ framework.SelectPlugin = (*Plugin)(nil)

// New builds the plugin. It takes no arguments: args must be empty, null
// or an empty JSON object.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{}, nil
}

// Name returns "Spread".
func (*Plugin) Name() string { return Name }

// Select applies each spread constraint in turn to ranked and returns the
// clusters kept, in ranked order.
func (*Plugin) Select(_ context.Context, _ framework.CycleState, u *framework.Unit, ranked []framework.ScoredCluster) ([]framework.ScoredCluster, *framework.Status) {
	if u.Placement == nil || len(u.Placement.SpreadConstraints) == 0 {
		return ranked, nil
	}
	out := ranked
	for _, c := range u.Placement.SpreadConstraints {
		var st *framework.Status
		if out, st = apply(c, out); !st.IsSuccess() {
			return nil, st
		}
	}
	return out, nil
}

// apply keeps the labelled clusters of the first maxGroups groups of c.
func apply(c v1alpha1.SpreadConstraint, ranked []framework.ScoredCluster) ([]framework.ScoredCluster, *framework.Status) {
	minGroups, maxGroups := 1, len(ranked)
	if c.MinGroups != nil {
		minGroups = int(*c.MinGroups)
	}
	if c.MaxGroups != nil {
		maxGroups = int(*c.MaxGroups)
	}
	if maxGroups < minGroups {
		return nil, framework.NewUnschedulable("spread over %s: minGroups %d exceeds maxGroups %d", c.TopologyKey, minGroups, maxGroups)
	}
	// rank of each group: the position of its best cluster among groups.
	rank := map[string]int{}
	unlabelled := 0
	for _, r := range ranked {
		v, ok := r.Cluster.Labels[c.TopologyKey]
		if !ok {
			unlabelled++
			continue
		}
		if _, seen := rank[v]; !seen {
			rank[v] = len(rank)
		}
	}
	if len(rank) < minGroups {
		reason := fmt.Sprintf("spread over %s needs %s, %d available", c.TopologyKey, plural(minGroups, "group"), len(rank))
		if unlabelled > 0 {
			reason += fmt.Sprintf(" (%s without the label)", plural(unlabelled, "cluster"))
		}
		return nil, framework.NewUnschedulable("%s", reason)
	}
	out := make([]framework.ScoredCluster, 0, len(ranked)-unlabelled)
	for _, r := range ranked {
		if v, ok := r.Cluster.Labels[c.TopologyKey]; ok && rank[v] < maxGroups {
			out = append(out, r)
		}
	}
	return out, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
