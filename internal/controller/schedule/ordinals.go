package schedule

import (
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
// they are; a divided Job keeps prev once made (less the clusters that no
// longer exist: exists says which do), and an Indexed one carries ranges
// of completion indexes. Any other placement carries no ranges.
func withOrdinals(u *framework.Unit, tmpl *unstructured.Unstructured, prev, next []v1alpha1.ClusterPlacement, exists func(string) bool) []v1alpha1.ClusterPlacement {
	if indexed, ok := scheduler.DividedJob(u, tmpl); ok {
		kept := keptJob(u, prev, exists)
		if kept == nil {
			kept = next
		}
		switch {
		case !indexed:
			return withoutRanges(kept)
		case hasRanges(kept):
			return kept // numbered once: a member's Job cannot change
		case len(kept) > 0:
			return ordinals.Assign(nil, kept, 0)
		}
		return kept
	}
	if base, ok := scheduler.FederatedOrdinals(u, tmpl); ok && len(next) > 0 {
		return ordinals.Assign(prev, next, base)
	}
	return withoutRanges(next)
}

// keptJob is the placement in force of a divided Job, without the
// clusters that are gone, if it divided the Job's completions; else nil.
func keptJob(u *framework.Unit, prev []v1alpha1.ClusterPlacement, exists func(string) bool) []v1alpha1.ClusterPlacement {
	var sum int32
	var out []v1alpha1.ClusterPlacement
	for _, p := range prev {
		if p.Replicas == nil {
			return nil
		}
		sum += *p.Replicas
		if exists(p.Cluster) {
			out = append(out, p)
		}
	}
	if len(prev) == 0 || u.Replicas == nil || sum != *u.Replicas || len(out) == 0 {
		return nil
	}
	return out
}

func hasRanges(ps []v1alpha1.ClusterPlacement) bool {
	for _, p := range ps {
		if p.OrdinalStart == nil {
			return false
		}
	}
	return len(ps) > 0
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
	return equality.Semantic.DeepEqual(withOrdinals(u, tmpl, current, current, exists), current)
}

// clusterSet says which of the candidate clusters exist.
func clusterSet(candidates []*v1alpha1.MemberCluster) func(string) bool {
	names := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		names[c.Name] = true
	}
	return func(n string) bool { return names[n] }
}
