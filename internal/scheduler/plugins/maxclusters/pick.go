package maxclusters

import (
	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// pick marks n of ranked (n < len(ranked)): the best cluster of each group
// up to every constraint's minGroups, then up to its maxGroups, then the
// rest by rank.
func pick(ranked []framework.ScoredCluster, n int, constraints []v1alpha1.SpreadConstraint) []bool {
	picked := make([]bool, len(ranked))
	count := 0
	covered := make([]map[string]bool, len(constraints))
	for k := range constraints {
		covered[k] = map[string]bool{}
	}
	take := func(i int) {
		picked[i] = true
		count++
		for k, c := range constraints {
			if v, ok := ranked[i].Cluster.Labels[c.TopologyKey]; ok {
				covered[k][v] = true
			}
		}
	}
	// cover opens new groups of constraint k, best cluster first, until
	// it covers limit groups (limit < 0: all) or n clusters are picked.
	cover := func(k, limit int) {
		key := constraints[k].TopologyKey
		for i := range ranked {
			if count == n || (limit >= 0 && len(covered[k]) >= limit) {
				return
			}
			v, ok := ranked[i].Cluster.Labels[key]
			if picked[i] || !ok || covered[k][v] {
				continue
			}
			take(i)
		}
	}
	for k, c := range constraints {
		cover(k, int(deref(c.MinGroups, 1)))
	}
	for k, c := range constraints {
		cover(k, int(deref(c.MaxGroups, -1)))
	}
	for i := range ranked {
		if count == n {
			break
		}
		if !picked[i] {
			take(i)
		}
	}
	return picked
}

// groups counts the distinct values of key among clusters.
func groups(clusters []framework.ScoredCluster, key string) int {
	seen := map[string]bool{}
	for _, r := range clusters {
		if v, ok := r.Cluster.Labels[key]; ok {
			seen[v] = true
		}
	}
	return len(seen)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
