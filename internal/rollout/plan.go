// Package rollout plans federated rolling updates (pure): it divides a
// workload's maxSurge and maxUnavailable among the clusters its replicas
// are divided over, so that across all members together no more replicas
// are unavailable, and no more pods run above the total, than the host
// object allows. A cluster is admitted with a share of the budget that
// is free, keeps it until its copy has rolled out (shares are never cut
// while a member may be using them), and gives it back for the clusters
// still waiting. The rollout controller feeds Plan what the member copies
// report and records the plan; the propagate controller renders each copy
// from it (For).
package rollout

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Budget is a rolling-update budget in replicas.
type Budget struct {
	// Surge is how many pods may run above the desired replicas.
	Surge int32
	// Unavailable is how many of the desired replicas may be unavailable.
	Unavailable int32
}

// Member is what the planner knows of one placed cluster's copy.
type Member struct {
	// Cluster is the MemberCluster's name.
	Cluster string
	// Replicas is the cluster's share of the workload (the placement).
	Replicas int32
	// Usable: the cluster is Ready and its copy is known (HasCopy and
	// the rest describe it); an unusable cluster's copy is unknown.
	Usable bool
	// UnusableSince is when the cluster stopped being usable.
	UnusableSince time.Time
	// HasCopy: the member holds a copy.
	HasCopy bool
	// Revision is the copy's flotilla.io/revision label.
	Revision string
	// Observed: the copy's status is of its current generation.
	Observed bool
	// Generation and ObservedGeneration are the copy's.
	Generation, ObservedGeneration int64
	// SpecReplicas is the copy's spec.replicas.
	SpecReplicas int32
	// Total, Updated and Available are the copy's status replicas,
	// updatedReplicas and availableReplicas.
	Total, Updated, Available int32
	// Stuck: the copy exceeded its progress deadline.
	Stuck bool
	// Stage is the member's index in Input.Stages.
	Stage int
	// Leaving: the cluster left the placement but its copy is still
	// there (graceful eviction); it is never admitted, and a share it
	// rolls with stays reserved until the copy is gone.
	Leaving bool
}

// Input is everything a plan depends on.
type Input struct {
	// Revision is the host pod template's revision.
	Revision string
	// Budget is the host object's budget (Resolve).
	Budget Budget
	// Previous is the plan recorded last, nil for none.
	Previous *v1alpha1.RolloutStatus
	// Members are the placed clusters, in the order they are admitted.
	Members []Member
	// Frozen admits nobody (the host object is paused): clusters already
	// rolling keep their shares.
	Frozen bool
	// Suspended: the object's federation is suspended (nothing is written
	// to its copies, which may be edited by hand). Nobody is admitted and
	// every cluster not rolling waits, so that on resuming each copy is
	// held and admitted again, whatever was done to it meanwhile.
	Suspended bool
	// Now is the time of the decision.
	Now time.Time
	// StallAfter is how long a rolling cluster may be unusable before
	// its share goes back to the others.
	StallAfter time.Duration
	// Stages order the members (Member.Stage indexes them); none: every
	// member is admissible at once.
	Stages []Stage
	// Approved is how many stages, from the first, have their Approval
	// gate approved for Revision (0: none).
	Approved int
	// Resumed is how many stages, from the first, have their halts lifted
	// and their Pause gates opened for Revision (0: none).
	Resumed int
}

// Plan returns the rollout plan: every member's state and the shares of
// those rolling. The shares of the rolling clusters never sum to more
// than the budget, less what the other clusters already lack (their
// unavailable replicas, their pods above their replicas).
func Plan(in Input) *v1alpha1.RolloutStatus {
	prev := map[string]v1alpha1.ClusterRollout{}
	if in.Previous != nil {
		for _, c := range in.Previous.Clusters {
			prev[c.Cluster] = c
		}
	}
	out := &v1alpha1.RolloutStatus{Revision: in.Revision, MaxSurge: in.Budget.Surge, MaxUnavailable: in.Budget.Unavailable}
	if in.Previous != nil && in.Previous.Revision == in.Revision {
		out.Reached = in.Previous.Reached
	}
	free := in.Budget
	var waiting []int // indexes into out.Clusters of admissible clusters
	for _, m := range in.Members {
		p, had := prev[m.Cluster]
		c := v1alpha1.ClusterRollout{Cluster: m.Cluster, State: state(in, m, p, had)}
		if len(in.Stages) > 0 {
			c.Stage = in.Stages[m.Stage].Name
		}
		switch c.State {
		case v1alpha1.RolloutRolling:
			// Rolling keeps its share until done: a cut could leave it
			// using more than its new share while the rest is handed on.
			c.MaxSurge, c.MaxUnavailable, c.Generation = p.MaxSurge, p.MaxUnavailable, p.Generation
			free.Surge -= p.MaxSurge
			free.Unavailable -= p.MaxUnavailable
		case v1alpha1.RolloutDone:
			// A done copy keeps the share it rolled with (not counted: it
			// rolls no more), so that finishing writes nothing to it.
			if had && (p.State == v1alpha1.RolloutRolling || p.State == v1alpha1.RolloutDone) {
				c.MaxSurge, c.MaxUnavailable = p.MaxSurge, p.MaxUnavailable
			}
		case v1alpha1.RolloutWaiting:
			if m.Usable && m.HasCopy && !m.Leaving {
				waiting = append(waiting, len(out.Clusters))
			}
		}
		if c.State != v1alpha1.RolloutRolling || c.MaxSurge+c.MaxUnavailable == 0 {
			// What the clusters that roll without a share lack already
			// counts against the budget.
			free.Unavailable -= lacking(m)
			free.Surge -= above(m)
		}
		c.Since = since(p, had, c.State, in.Now)
		c.Readmit = c.State == v1alpha1.RolloutWaiting && (in.Suspended || had && p.Readmit)
		out.Clusters = append(out.Clusters, c)
	}
	defer slices.SortFunc(out.Clusters, func(a, b v1alpha1.ClusterRollout) int { return cmp.Compare(a.Cluster, b.Cluster) })
	if len(in.Stages) > 0 {
		waiting = staged(in, out, waiting)
	}
	if in.Frozen || in.Suspended {
		return out
	}
	weights := make([]int32, len(waiting))
	for i, idx := range waiting {
		weights[i] = in.Members[idx].SpecReplicas
	}
	for i, share := range admit(free, weights) {
		if share.Surge+share.Unavailable == 0 {
			continue
		}
		c := &out.Clusters[waiting[i]]
		c.State, c.MaxSurge, c.MaxUnavailable = v1alpha1.RolloutRolling, share.Surge, share.Unavailable
		c.Generation = in.Members[waiting[i]].Generation
		c.Since = metav1.NewTime(in.Now)
	}
	return out
}

// state is where a member is:
//   - Rolling with its share once admitted, until done; a rolling cluster
//     that stays unusable for StallAfter is Stalled (its share goes back);
//     one leaving the placement keeps its share while its copy is there;
//   - Rolling without a share from the start when nothing is to be
//     replaced: a new copy (a usable cluster known to hold none), or, with
//     no plan for it yet, a copy already of the revision (or of no
//     revision at all: a copy written before rollouts were federated);
//   - Done once its copy has rolled out the revision (and stays so for
//     the revision: a scale is no rollout);
//   - Waiting otherwise, which holds the copy. A cluster waiting since a
//     suspension (Readmit) leaves Waiting only when admitted: its copy
//     may run a template someone changed by hand, which only a roll
//     within the budget puts right.
//
// An unusable cluster's copy is unknown: it keeps its state (Waiting when
// it had none).
func state(in Input, m Member, p v1alpha1.ClusterRollout, had bool) v1alpha1.RolloutState {
	sameRevision := in.Previous != nil && in.Previous.Revision == in.Revision
	rolling := had && p.State == v1alpha1.RolloutRolling
	switch {
	case rolling && p.MaxSurge+p.MaxUnavailable > 0:
		switch {
		case m.Usable && Done(m, in.Revision) && m.ObservedGeneration > p.Generation:
			// Done with what it was admitted to roll: the member observed
			// a spec written after the admission.
			return v1alpha1.RolloutDone
		case m.Usable, in.Now.Sub(m.UnusableSince) < in.StallAfter:
			return v1alpha1.RolloutRolling
		}
		return v1alpha1.RolloutStalled
	case in.Suspended:
		return v1alpha1.RolloutWaiting
	case !m.Usable:
		if had && p.State != v1alpha1.RolloutRolling && (sameRevision || p.State == v1alpha1.RolloutStalled) {
			return p.State
		}
		return v1alpha1.RolloutWaiting
	case m.Leaving:
		return v1alpha1.RolloutWaiting
	case had && p.State == v1alpha1.RolloutWaiting && p.Readmit:
		return v1alpha1.RolloutWaiting
	case had && p.State == v1alpha1.RolloutStalled:
		return v1alpha1.RolloutWaiting
	case Done(m, in.Revision):
		return v1alpha1.RolloutDone
	case had && p.State == v1alpha1.RolloutDone && sameRevision:
		return v1alpha1.RolloutDone
	case !m.HasCopy:
		return v1alpha1.RolloutRolling // a new copy: created as it is
	case rolling && sameRevision:
		return v1alpha1.RolloutRolling // a new copy, still starting
	case !had && (m.Revision == in.Revision || in.Previous == nil && m.Revision == ""):
		return v1alpha1.RolloutRolling
	}
	return v1alpha1.RolloutWaiting
}

// Done reports whether a copy has rolled out revision: it holds it, its
// status is current, and all the replicas it asks for are of the revision
// with no old pod left. Their availability counts against the budget
// whatever the state (lacking).
func Done(m Member, revision string) bool {
	return m.HasCopy && m.Revision == revision && m.Observed &&
		m.Updated == m.SpecReplicas && m.Total == m.SpecReplicas
}

// Using is what a copy takes from the budget outside any share: its
// replicas that are unavailable and its pods above its replicas.
func Using(m Member) (unavailable, surplus int32) { return lacking(m), above(m) }

// lacking is how many of a copy's replicas are unavailable.
func lacking(m Member) int32 {
	if !m.Usable || !m.HasCopy {
		return 0
	}
	return max(0, m.SpecReplicas-m.Available)
}

// above is how many pods a copy runs above its replicas.
func above(m Member) int32 {
	if !m.Usable || !m.HasCopy {
		return 0
	}
	return max(0, m.Total-m.SpecReplicas)
}

// since keeps a state's start while the state stays.
func since(p v1alpha1.ClusterRollout, had bool, state v1alpha1.RolloutState, now time.Time) metav1.Time {
	if had && p.State == state {
		return p.Since
	}
	return metav1.NewTime(now)
}

// admit divides the free budget among the waiting clusters (weights:
// their replicas), in order: first one unit each (unavailability first,
// as a single cluster's rollout spends it first, then surge) while any is
// left, so that as many clusters as the budget allows roll at once and
// none is starved; then the rest of each kind in proportion to the
// weights (the largest quotient w/(a+1) takes the next unit, ties to the
// earlier), never more than a cluster's replicas. A share of 0/0 waits.
func admit(free Budget, weights []int32) []Budget {
	out := make([]Budget, len(weights))
	free.Surge, free.Unavailable = max(free.Surge, 0), max(free.Unavailable, 0)
	var admitted []int
	for i, w := range weights {
		switch {
		case w == 0:
			// Nothing to replace: a unit of surge lets it move to the
			// new template.
			if free.Surge > 0 {
				out[i].Surge, free.Surge = 1, free.Surge-1
			} else if free.Unavailable > 0 {
				out[i].Unavailable, free.Unavailable = 1, free.Unavailable-1
			}
			continue
		case free.Unavailable > 0:
			out[i].Unavailable, free.Unavailable = 1, free.Unavailable-1
		case free.Surge > 0:
			out[i].Surge, free.Surge = 1, free.Surge-1
		default:
			continue
		}
		admitted = append(admitted, i)
	}
	spread(free.Unavailable, admitted, weights, func(i int) *int32 { return &out[i].Unavailable })
	spread(free.Surge, admitted, weights, func(i int) *int32 { return &out[i].Surge })
	return out
}

// spread hands units one at a time to the admitted cluster with the
// largest quotient weight/(share+1) whose share is below its weight.
func spread(units int32, admitted []int, weights []int32, share func(int) *int32) {
	for ; units > 0; units-- {
		best := -1
		for _, i := range admitted {
			a := *share(i)
			if a >= weights[i] {
				continue
			}
			// w_i/(a_i+1) > w_b/(a_b+1), in integers.
			if best < 0 || int64(weights[i])*int64(*share(best)+1) > int64(weights[best])*int64(a+1) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		*share(best)++
	}
}

// Entry returns the plan's entry of a cluster, or nil.
func Entry(st *v1alpha1.RolloutStatus, cluster string) *v1alpha1.ClusterRollout {
	if st == nil {
		return nil
	}
	for i := range st.Clusters {
		if st.Clusters[i].Cluster == cluster {
			return &st.Clusters[i]
		}
	}
	return nil
}
