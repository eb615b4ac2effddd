// Package groups is the Groups select plugin: the first level of a
// two-level placement (placement.groups). Clusters are grouped by the
// value of a label (a data centre, a region, a provider); the plugin
// chooses groups and keeps the clusters of the chosen ones, for the other
// select plugins and the replica planner to place within.
//
// Groups are chosen in this order:
//
//  1. the groups where the object runs now, so that a placement does not
//     scatter or move for a cheaper group;
//  2. then, among groups with room for at least one replica or able to grow
//     (room.Elastic), the cheapest first (the average flotilla.io/cost of
//     its clusters), then those that can grow, then the most room, then by
//     name;
//
// until the chosen groups' room holds the replicas (room.Replicas: the
// simulated estimate, else the status sums), or placement.groups.maxGroups
// is reached (groups the object runs in stay even beyond it). When even all of them cannot hold the replicas and none of
// the chosen groups can grow, the cheapest group that can grow is added
// (within maxGroups): that is where the unplaceable replicas gather. An
// object that is not divided takes one group unless maxGroups says more.
package groups

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/room"
)

// Name is the plugin's name in profiles.
const Name = "Groups"

// Plugin chooses groups of clusters.
type Plugin struct{}

var _ framework.SelectPlugin = (*Plugin)(nil)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Plugin{}, nil
}

// Name returns "Groups".
func (*Plugin) Name() string { return Name }

// group is the clusters sharing a label value.
type group struct {
	name     string
	clusters []framework.ScoredCluster
	running  bool  // the object runs in one of them
	room     int64 // replicas they have room for
	cost     float64
	elastic  bool
}

// Select keeps the clusters of the chosen groups, in ranked order.
func (*Plugin) Select(_ context.Context, state framework.CycleState, u *framework.Unit, ranked []framework.ScoredCluster) ([]framework.ScoredCluster, *framework.Status) {
	if u.Placement == nil || u.Placement.Groups == nil {
		return ranked, nil
	}
	key := u.Placement.Groups.TopologyKey
	byName := map[string]*group{}
	var all []*group
	for _, r := range ranked {
		v, ok := r.Cluster.Labels[key]
		if !ok {
			continue
		}
		g := byName[v]
		if g == nil {
			g = &group{name: v}
			byName[v] = g
			all = append(all, g)
		}
		g.clusters = append(g.clusters, r)
		if _, placed := u.CurrentReplicas(r.Cluster.Name); placed {
			g.running = true
		}
		g.room = min(g.room+room.Replicas(u, r.Cluster), room.Unlimited)
		g.cost += float64(room.Cost(r.Cluster))
		if e, _ := room.Elastic(r.Cluster); e {
			g.elastic = true
		}
	}
	if len(all) == 0 {
		return nil, framework.NewUnschedulable("no feasible cluster has the label %s", key)
	}
	for _, g := range all {
		g.cost /= float64(len(g.clusters))
	}
	slices.SortFunc(all, func(a, b *group) int {
		switch {
		case a.running != b.running:
			return boolFirst(a.running)
		case (a.room > 0 || a.elastic) != (b.room > 0 || b.elastic):
			return boolFirst(a.room > 0 || a.elastic)
		case a.cost != b.cost:
			return cmp.Compare(a.cost, b.cost)
		case a.elastic != b.elastic:
			return boolFirst(a.elastic)
		case a.room != b.room:
			return cmp.Compare(b.room, a.room)
		}
		return strings.Compare(a.name, b.name)
	})
	need := int64(1)
	limit := len(all)
	if u.Divide() {
		need = int64(max(*u.Replicas, 0))
	} else {
		limit = 1
	}
	if m := u.Placement.Groups.MaxGroups; m != nil {
		limit = min(int(*m), len(all))
	}
	if need == 0 {
		return ranked, nil // nothing to place: every group keeps its copy
	}
	var chosen []*group
	covered, elastic := int64(0), false
	for _, g := range all {
		// Running groups come first and all stay, whatever the limit:
		// dropping one would move what runs there.
		if !g.running && (len(chosen) >= limit || covered >= need) {
			break
		}
		if !g.running && g.room == 0 && !g.elastic {
			break // sorted last: no further group helps
		}
		chosen = append(chosen, g)
		covered += g.room
		elastic = elastic || g.elastic
	}
	if covered < need && !elastic && len(chosen) < limit {
		// Nothing holds them all: add the cheapest group that can grow,
		// where the replicas that fit nowhere wait for new nodes.
		for _, g := range all[len(chosen):] {
			if g.elastic {
				chosen = append(chosen, g)
				break
			}
		}
	}
	if len(chosen) == 0 {
		return nil, framework.NewUnschedulable("no group of %s has room for a replica or can grow", key)
	}
	keep := map[string]bool{}
	names := make([]string, len(chosen))
	for i, g := range chosen {
		names[i] = describe(g)
		for _, c := range g.clusters {
			keep[c.Cluster.Name] = true
		}
	}
	out := make([]framework.ScoredCluster, 0, len(keep))
	for _, r := range ranked {
		if keep[r.Cluster.Name] {
			out = append(out, r)
		}
	}
	framework.Note(state, "groups by %s: %s of %d", key, strings.Join(names, ", "), len(all))
	return out, nil
}

func describe(g *group) string {
	parts := []string{fmt.Sprintf("cost %g", g.cost)}
	if g.room < room.Unlimited {
		parts = append(parts, fmt.Sprintf("room %d", g.room))
	}
	if g.elastic {
		parts = append(parts, "elastic")
	}
	if g.running {
		parts = append(parts, "running")
	}
	return fmt.Sprintf("%s (%s)", g.name, strings.Join(parts, ", "))
}

func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}
