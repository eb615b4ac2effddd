package schedule

import (
	"fmt"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// noFit decides the placement of an object that no cluster fits any more
// (no cluster passes the filters). A transient or mistaken input (a typo in
// flotilla.io/cluster-names, relabelled or tainted clusters, a webhook
// rejecting every cluster) must not delete a workload everywhere at once,
// so the current placement stays in force unless the policy or the object
// allows an empty placement. Only clusters that cannot hold the object any
// more leave it: clusters drained with --force and clusters that are gone
// or leaving the federation. A divided Job (keptOnceMade) keeps every
// cluster that exists whatever the mode: a member's Job cannot change
// its share. note says what was done, for the Scheduled condition.
func noFit(current []v1alpha1.ClusterPlacement, clusters []*v1alpha1.MemberCluster, mode v1alpha1.EmptyPlacement, keptOnceMade bool) (placement []v1alpha1.ClusterPlacement, note string) {
	if len(current) == 0 {
		return nil, ""
	}
	if keptOnceMade {
		exists := make(map[string]bool, len(clusters))
		for _, c := range clusters {
			exists[c.Name] = true
		}
		for _, p := range current {
			if exists[p.Cluster] {
				placement = append(placement, p)
			}
		}
		if len(placement) == 0 {
			return nil, "the placement is emptied: its clusters are gone"
		}
		return placement, fmt.Sprintf("keeping the current placement (%s): a divided Job's placement is kept once made", describe(placement))
	}
	if mode == v1alpha1.EmptyPlacementAllow {
		return nil, "the placement is emptied (emptyPlacement: Allow)"
	}
	byName := make(map[string]*v1alpha1.MemberCluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	var forced []string
	for _, p := range current {
		c := byName[p.Cluster]
		switch {
		case c == nil || !c.DeletionTimestamp.IsZero():
			continue // gone: it holds nothing Flotilla can reach
		case scheduler.ForceDrained(c):
			forced = append(forced, p.Cluster)
			continue
		}
		placement = append(placement, p)
	}
	switch {
	case len(placement) == 0 && len(forced) > 0:
		return nil, fmt.Sprintf("the placement is emptied: %v drained with --force", forced)
	case len(placement) == 0:
		return nil, "the placement is emptied: its clusters are gone"
	}
	return placement, fmt.Sprintf("keeping the current placement (%s) and its copies; set placement.emptyPlacement: Allow in the policy, or the annotation %s: allow on the object, to let it lose every cluster", describe(placement), v1alpha1.AnnotationEmptyPlacement)
}
