package schedule

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ordinals"
)

// withOrdinals adjusts a decision for the kinds whose pods are numbered
// across clusters: a divided StatefulSet's placement gets its clusters'
// ordinal ranges, keeping those of prev (the placement in force) where
// they are (a cluster of prev that stays eligible, stays, but got no
// share keeps a range of 0 rather than leaving); a divided Job keeps prev
// once made (less the clusters that no longer exist: exists says which
// do), and an Indexed one carries ranges of completion indexes. Any other
// placement carries no ranges.
func withOrdinals(u *framework.Unit, tmpl *unstructured.Unstructured, prev, next []v1alpha1.ClusterPlacement, exists, stays func(string) bool) []v1alpha1.ClusterPlacement {
	if indexed, ok := scheduler.DividedJob(u, tmpl); ok {
		kept := keptJob(prev, exists)
		if kept == nil {
			kept = next
		}
		switch {
		case !indexed || !hasReplicas(kept):
			return withoutRanges(kept)
		case hasRanges(kept):
			return kept // numbered once: a member's Job cannot change
		case len(kept) > 0:
			return ordinals.Assign(nil, kept, 0)
		}
		return kept
	}
	if base, ok := scheduler.FederatedOrdinals(u, tmpl); ok && len(next) > 0 {
		return ordinals.Assign(prev, withZeroShares(prev, next, stays), base)
	}
	return withoutRanges(next)
}

// withZeroShares adds to next, with 0 replicas, the clusters of prev that
// stay eligible (stays) but got no share: a scale-down that gives a
// cluster nothing must shrink the ranges from the top, not hand that
// cluster's range to a neighbour as if it had left.
func withZeroShares(prev, next []v1alpha1.ClusterPlacement, stays func(string) bool) []v1alpha1.ClusterPlacement {
	in := make(map[string]bool, len(next))
	for _, p := range next {
		in[p.Cluster] = true
	}
	out := next
	for _, p := range prev {
		if !in[p.Cluster] && stays(p.Cluster) {
			if len(out) == len(next) {
				out = append([]v1alpha1.ClusterPlacement(nil), next...)
			}
			out = append(out, v1alpha1.ClusterPlacement{Cluster: p.Cluster, Replicas: new(int32)})
		}
	}
	return out
}

// hasReplicas and hasRanges report whether every entry of a non-empty
// placement has replicas, or an ordinal start.
func hasReplicas(ps []v1alpha1.ClusterPlacement) bool {
	return len(ps) > 0 && !slices.ContainsFunc(ps, func(p v1alpha1.ClusterPlacement) bool { return p.Replicas == nil })
}

func hasRanges(ps []v1alpha1.ClusterPlacement) bool {
	return len(ps) > 0 && !slices.ContainsFunc(ps, func(p v1alpha1.ClusterPlacement) bool { return p.OrdinalStart == nil })
}

// keptJob is the placement in force of a Job, without the clusters that
// are gone; nil when there is none (the first decision) or every cluster
// of it is gone. A Job's copies cannot change their completions, so once
// placed — divided, or whole as before it was divided — it stays so.
func keptJob(prev []v1alpha1.ClusterPlacement, exists func(string) bool) []v1alpha1.ClusterPlacement {
	var out []v1alpha1.ClusterPlacement
	for _, p := range prev {
		if exists(p.Cluster) {
			out = append(out, p)
		}
	}
	return out
}

// withoutRanges is ps without ordinal starts.
func withoutRanges(ps []v1alpha1.ClusterPlacement) []v1alpha1.ClusterPlacement {
	var out []v1alpha1.ClusterPlacement
	for i, p := range ps {
		if p.OrdinalStart != nil {
			if out == nil {
				out = append([]v1alpha1.ClusterPlacement(nil), ps...)
			}
			out[i].OrdinalStart = nil
		}
	}
	if out == nil {
		return ps
	}
	return out
}

// ordinalsInForce reports whether the placement in force is already what
// withOrdinals keeps of it, so that an unchanged basis may skip the
// decision.
func ordinalsInForce(u *framework.Unit, tmpl *unstructured.Unstructured, current []v1alpha1.ClusterPlacement, exists func(string) bool) bool {
	return equality.Semantic.DeepEqual(withOrdinals(u, tmpl, current, current, exists, exists), current)
}

// clusterSet says which of the candidate clusters exist.
func clusterSet(candidates []*v1alpha1.MemberCluster) func(string) bool {
	names := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		names[c.Name] = true
	}
	return func(n string) bool { return names[n] }
}
