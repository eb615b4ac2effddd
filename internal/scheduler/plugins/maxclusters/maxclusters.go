// Package maxclusters is the MaxClusters select plugin: it keeps at most
// placement.maxClusters of the ranked clusters.
//
// Without spread constraints it keeps the best-ranked N clusters (ties in
// the ranking are already broken by the framework's hash of the object's
// key, so the choice is stable). It does not prefer the clusters the object
// is on today: stickiness is the policy's sticky field and the score
// plugins' business, not this truncation's.
//
// With spread constraints it chooses so that truncating does not undo the
// spread: first, for each constraint in order, the best cluster of each
// uncovered group until minGroups groups are covered; then, for each
// constraint, the best cluster of each further group up to maxGroups; then
// the rest by rank. So maxClusters 2 with minGroups 2 picks the best
// cluster of each of two groups, not the two best clusters of one group.
// A cluster without a constraint's label opens no group but can still be
// picked by rank. When the N clusters kept cover fewer than minGroups groups
// of a constraint although the ranked clusters cover enough, the plugin
// reports Unschedulable. In the default profile Spread runs first (dropping
// unlabelled clusters and groups beyond maxGroups), then MaxClusters.
package maxclusters

import (
	"context"
	"fmt"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "MaxClusters"

// Plugin keeps at most placement.maxClusters clusters.
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

// Name returns "MaxClusters".
func (*Plugin) Name() string { return Name }

// Select keeps at most placement.maxClusters of ranked (all when unset), in
// ranked order.
func (*Plugin) Select(_ context.Context, _ framework.CycleState, u *framework.Unit, ranked []framework.ScoredCluster) ([]framework.ScoredCluster, *framework.Status) {
	if u.Placement == nil || u.Placement.MaxClusters == nil {
		return ranked, nil
	}
	n := int(*u.Placement.MaxClusters)
	if n < 1 {
		return nil, framework.NewUnschedulable("maxClusters %d allows no cluster", n)
	}
	if n >= len(ranked) {
		return ranked, nil
	}
	// The clusters the object is on come first (in rank order), so that a
	// capped object stays where it is while its clusters stay feasible,
	// instead of following every shift of the scores.
	order := make([]framework.ScoredCluster, 0, len(ranked))
	for _, r := range ranked {
		if _, placed := u.CurrentReplicas(r.Cluster.Name); placed {
			order = append(order, r)
		}
	}
	for _, r := range ranked {
		if _, placed := u.CurrentReplicas(r.Cluster.Name); !placed {
			order = append(order, r)
		}
	}
	kept := map[string]bool{}
	constraints := u.Placement.SpreadConstraints
	if len(constraints) == 0 {
		for _, r := range order[:n] {
			kept[r.Cluster.Name] = true
		}
	} else {
		for i, p := range pick(order, n, constraints) {
			if p {
				kept[order[i].Cluster.Name] = true
			}
		}
	}
	out := make([]framework.ScoredCluster, 0, n)
	for _, r := range ranked { // rank order, which Binpack relies on
		if kept[r.Cluster.Name] {
			out = append(out, r)
		}
	}
	for _, c := range constraints {
		if c.MinGroups == nil {
			continue
		}
		need := int(*c.MinGroups)
		if got := groups(out, c.TopologyKey); got < need && groups(ranked, c.TopologyKey) >= need {
			return nil, framework.NewUnschedulable("maxClusters %d covers %s of %s, spread needs %d", n, plural(got, "group"), c.TopologyKey, need)
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
