package migrate

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// observation is what one placed cluster shows of a workload.
type observation struct {
	cluster string
	// placed is the replicas the placement gives the cluster.
	placed int32
	// pods is how many of the workload's pods exist there.
	pods int32
	// unschedulable holds, per Unschedulable pod, since when.
	unschedulable []time.Time
}

// roomFunc reports whether a cluster has room for n more replicas.
type roomFunc func(cluster string, n int32) bool

// change is a limit set or lifted, for events.
type change struct {
	cluster string
	lifted  bool
	message string
}

// Hold times: a limit is held at least baseHold, twice as long each time
// it is set again soon after being lifted, at most maxHold; a lifted limit
// is remembered for forgetAfter.
const (
	baseHold    = time.Minute
	maxHold     = time.Hour
	forgetAfter = 2 * time.Hour
	// roomRecheck is how often a limit past its hold looks for room.
	roomRecheck = time.Minute
)

// holdFor is how long a limit set count times in a row is held.
func holdFor(count int32) time.Duration {
	if count < 1 {
		count = 1
	}
	if count > 7 {
		return maxHold
	}
	return min(baseHold<<(count-1), maxHold)
}

// nextLimits computes a workload's capacity limits from the current ones
// and what the clusters show. A cluster whose pods stayed Unschedulable
// for threshold is limited to the replicas it does run; an active limit is
// lifted once held long enough and the cluster has room for the replicas
// that moved away (and shows no Unschedulable pod). recheck is when to
// look again for time-based changes (zero: no need).
func nextLimits(current []v1alpha1.CapacityLimit, obs []observation, threshold time.Duration, room roomFunc, now time.Time) (out []v1alpha1.CapacityLimit, recheck time.Duration, changes []change) {
	limits := map[string]v1alpha1.CapacityLimit{}
	for _, l := range current {
		limits[l.Cluster] = *l.DeepCopy()
	}
	soon := func(d time.Duration) {
		if d > 0 && (recheck == 0 || d < recheck) {
			recheck = d
		}
	}
	stuck := map[string]bool{}
	for _, o := range obs {
		var long int32
		for _, since := range o.unschedulable {
			if age := now.Sub(since); age >= threshold {
				long++
			} else {
				soon(threshold - age)
			}
		}
		stuck[o.cluster] = len(o.unschedulable) > 0
		if long == 0 {
			continue
		}
		capacity := max(min(o.placed, o.pods-long), 0)
		if capacity >= o.placed {
			continue // the extra pods of a rollout: it runs what it is given
		}
		old, had := limits[o.cluster]
		if had && old.LiftedAt != nil && now.Sub(old.LiftedAt.Time) >= forgetAfter {
			had = false // lifted long ago: not "again"
		}
		if had && old.LiftedAt == nil && old.Replicas <= capacity {
			continue
		}
		l := v1alpha1.CapacityLimit{Cluster: o.cluster, Replicas: capacity, Unschedulable: o.placed - capacity, Since: metav1.NewTime(now), Count: 1}
		switch {
		case had && old.LiftedAt == nil:
			// Lowered further while held: the replicas that moved before
			// and those that move now (the placement may hold more than
			// the limit when no other cluster had room, or less after a
			// scale-down).
			l.Count = old.Count
			l.Unschedulable = old.Unschedulable + min(o.placed, old.Replicas) - capacity
		case had:
			l.Count = old.Count + 1 // set again after a lift: hold longer
		}
		l.Message = fmt.Sprintf("%d of the %d replicas placed here stayed Unschedulable for %s or more; the cluster is given at most %d, held for at least %s", long, o.placed, threshold, capacity, holdFor(l.Count))
		limits[o.cluster] = l
		changes = append(changes, change{cluster: o.cluster, message: l.Message})
	}
	for name, l := range limits {
		if l.LiftedAt != nil {
			if age := now.Sub(l.LiftedAt.Time); age >= forgetAfter {
				delete(limits, name)
			} else {
				soon(forgetAfter - age)
			}
			continue
		}
		due := l.Since.Add(holdFor(l.Count))
		if now.Before(due) {
			soon(due.Sub(now))
			continue
		}
		if stuck[name] || !room(name, l.Unschedulable) {
			soon(roomRecheck)
			continue
		}
		lifted := metav1.NewTime(now)
		l.LiftedAt = &lifted
		l.Message = fmt.Sprintf("lifted: the cluster has room for %d more replicas again", l.Unschedulable)
		limits[name] = l
		changes = append(changes, change{cluster: name, lifted: true, message: fmt.Sprintf("capacity limit of %d replicas lifted: the cluster has room for %d more again", l.Replicas, l.Unschedulable)})
	}
	for _, l := range limits {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out, recheck, changes
}
