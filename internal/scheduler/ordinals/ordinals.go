// Package ordinals gives the clusters of a divided StatefulSet disjoint
// ranges of pod ordinals (each copy's spec.ordinals.start), so that every
// pod identity — name, hostname, PVC — exists once in the federation, and
// keeps identities where they are as the StatefulSet changes.
//
// The ranges form a chain over [base, base+total): one contiguous range
// per cluster, in a fixed order. A StatefulSet can only hold one range,
// so identity stability decides the counts once the chain exists:
//
//   - the first placement takes the scheduler's counts, in cluster name
//     order;
//   - a scale-up appends the new ordinals to the last range of the chain
//     (a cluster that joined the placement is appended to the chain empty,
//     so it is the one that grows);
//   - a scale-down removes the highest ordinals, from the end of the
//     chain, as a single StatefulSet does;
//   - a cluster that leaves the placement hands its range to the range
//     before it (or, for the first range, after it), which grows to cover
//     it: those ordinals move, and their data does not (nothing is
//     copied; the new pods start with new volumes);
//   - a different base (the template's spec.ordinals.start) shifts every
//     range;
//   - a chain without pods (scaled to 0) is numbered afresh.
package ordinals

import (
	"sort"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// segment is one cluster's range.
type segment struct {
	cluster string
	start   int32
	count   int32
}

// Assign returns next (the scheduler's placement: the clusters and,
// with their replicas, the total) with every cluster's replicas and
// ordinal start set by the chain rules, given prev, the placement in
// force, and base, the first ordinal. The result is sorted by cluster
// name, as placements are. A next without replicas is returned as it is.
func Assign(prev, next []v1alpha1.ClusterPlacement, base int32) []v1alpha1.ClusterPlacement {
	var total int32
	for _, p := range next {
		if p.Replicas == nil {
			return next
		}
		total += *p.Replicas
	}
	placed := make(map[string]bool, len(next))
	for _, p := range next {
		placed[p.Cluster] = true
	}
	chain := chainOf(prev)
	if !covers(chain, placed) || empty(chain) {
		// Nothing to keep: no placed cluster of it, or no pod at all (a
		// StatefulSet scaled to 0 is placed afresh when it grows again).
		chain = nil
	}
	if chain == nil {
		// The first placement, or one from before ordinals: the
		// scheduler's counts in cluster name order.
		sorted := append([]v1alpha1.ClusterPlacement(nil), next...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Cluster < sorted[j].Cluster })
		for _, p := range sorted {
			chain = append(chain, segment{cluster: p.Cluster, count: *p.Replicas})
		}
		return result(chain, base)
	}
	chain = handOver(chain, placed)
	// Clusters new to the placement join the end of the chain, empty.
	inChain := make(map[string]bool, len(chain))
	for _, s := range chain {
		inChain[s.cluster] = true
	}
	var joined []string
	for _, p := range next {
		if !inChain[p.Cluster] {
			joined = append(joined, p.Cluster)
		}
	}
	sort.Strings(joined)
	for _, c := range joined {
		chain = append(chain, segment{cluster: c})
	}
	var have int32
	for _, s := range chain {
		have += s.count
	}
	switch {
	case total > have:
		chain[len(chain)-1].count += total - have
	case total < have:
		drop := have - total
		for i := len(chain) - 1; i >= 0 && drop > 0; i-- {
			d := min(drop, chain[i].count)
			chain[i].count -= d
			drop -= d
		}
	}
	return result(chain, base)
}

// chainOf reads the chain of the placement in force: its ranges ordered
// by start. It is nil unless every entry has replicas and a start and
// the ranges are contiguous without overlap.
func chainOf(prev []v1alpha1.ClusterPlacement) []segment {
	chain := make([]segment, 0, len(prev))
	for _, p := range prev {
		if p.Replicas == nil || p.OrdinalStart == nil {
			return nil
		}
		chain = append(chain, segment{cluster: p.Cluster, start: *p.OrdinalStart, count: *p.Replicas})
	}
	sort.SliceStable(chain, func(i, j int) bool {
		if chain[i].start != chain[j].start {
			return chain[i].start < chain[j].start
		}
		return chain[i].count < chain[j].count // empty ranges first
	})
	for i := 1; i < len(chain); i++ {
		if chain[i].start != chain[i-1].start+chain[i-1].count {
			return nil
		}
	}
	if len(chain) == 0 {
		return nil
	}
	return chain
}

// empty reports whether the chain holds no ordinal.
func empty(chain []segment) bool {
	for _, s := range chain {
		if s.count > 0 {
			return false
		}
	}
	return true
}

// covers reports whether some cluster of the chain stays placed: without
// one there is nothing to keep.
func covers(chain []segment, placed map[string]bool) bool {
	for _, s := range chain {
		if placed[s.cluster] {
			return true
		}
	}
	return false
}

// handOver removes the clusters that left the placement: each run of
// them goes to the placed range before it, or after it at the start.
func handOver(chain []segment, placed map[string]bool) []segment {
	out := make([]segment, 0, len(chain))
	var orphan int32 // ordinals of leavers before the first placed range
	for _, s := range chain {
		switch {
		case placed[s.cluster]:
			s.count += orphan
			orphan = 0
			out = append(out, s)
		case len(out) > 0:
			out[len(out)-1].count += s.count
		default:
			orphan += s.count
		}
	}
	return out
}

// result numbers the chain from base and sorts it by cluster.
func result(chain []segment, base int32) []v1alpha1.ClusterPlacement {
	out := make([]v1alpha1.ClusterPlacement, 0, len(chain))
	at := base
	for _, s := range chain {
		out = append(out, v1alpha1.ClusterPlacement{Cluster: s.cluster, Replicas: ptr.To(s.count), OrdinalStart: ptr.To(at)})
		at += s.count
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}
