package replicas

import (
	"cmp"
	"slices"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	planner "github.com/flotilla-io/flotilla/internal/scheduler/replicas"
)

// waterLevel splits total by the targets' water levels; what the weighted
// targets cannot hold goes evenly to the zero-weight (full) ones.
func (p *Plugin) waterLevel(total int64, ts []target, rs *v1alpha1.ReplicaScheduling, seed string) []int64 {
	capFactor := p.defaultCap
	if rs.WaterLevelCapPercent != nil && *rs.WaterLevelCapPercent > 0 {
		capFactor = float64(*rs.WaterLevelCapPercent) / 100
	}
	rooms := make([]planner.Capacity, len(ts))
	for i := range ts {
		rooms[i] = ts[i].room
	}
	w := planner.WaterLevel(rooms, capFactor)
	weighted := plain(ts)
	for i := range weighted {
		weighted[i].Weight = w[i]
	}
	plan := planner.Split(total, weighted, seed)
	if left := total - sum(plan); left > 0 {
		spill := make([]bool, len(ts))
		for i := range ts {
			spill[i] = weighted[i].Weight == 0
		}
		spread(left, plan, ts, spill, seed)
	}
	return plan
}

// binpack fills the targets in order (best first): everyone's minimum,
// then each up to what fits and its maximum; the rest evenly over those
// below their maximum, unless spreadRest is false (simulated room: the
// caller gathers it).
func binpack(total int64, ts []target, seed string, spreadRest bool) []int64 {
	plan := make([]int64, len(ts))
	left := total
	for i := range ts {
		plan[i] = min(ts[i].Min, left)
		left -= plan[i]
	}
	for i := range ts {
		if left == 0 {
			break
		}
		room := ts[i].fit - plan[i]
		if ts[i].Max >= 0 {
			room = min(room, ts[i].Max-plan[i])
		}
		if room > 0 {
			add := min(room, left)
			plan[i] += add
			left -= add
		}
	}
	if left > 0 && spreadRest {
		spread(left, plan, ts, nil, seed)
	}
	return plan
}

// spread adds n replicas to plan evenly over the targets that only[i]
// allows (all when only is nil), within their maximums.
func spread(n int64, plan []int64, ts []target, only []bool, seed string) {
	extra := make([]planner.Target, len(ts))
	for i := range ts {
		extra[i] = planner.Target{Name: ts[i].Name, Weight: 1, Max: planner.NoMax}
		if ts[i].Max >= 0 {
			extra[i].Max = max(ts[i].Max-plan[i], 0)
		}
		if only != nil && !only[i] {
			extra[i].Max = 0
		}
	}
	for i, v := range planner.Split(n, extra, seed) {
		plan[i] += v
	}
}

// overLimits spreads n replicas no cluster can take within its capacity
// limit evenly over the limited clusters, up to their other limits.
func overLimits(n int64, plan []int64, ts []target, seed string) {
	extra := make([]planner.Target, len(ts))
	for i := range ts {
		extra[i] = planner.Target{Name: ts[i].Name, Weight: 1, Max: 0}
		if ts[i].limited {
			extra[i].Max = planner.NoMax
			if ts[i].beyond >= 0 {
				extra[i].Max = max(ts[i].beyond-plan[i], 0)
			}
		}
	}
	for i, v := range planner.Split(n, extra, seed) {
		plan[i] += v
	}
}

// keep reaches plan from the current replicas without moving running ones
// because weights changed. The start is each target's held replicas within
// its minimum and maximum; clusters no longer chosen are not targets, so
// their replicas are part of what the scale-up to plan places.
func keep(plan []int64, ts []target, seed string) []int64 {
	start := make([]int64, len(ts))
	names := make([]string, len(ts))
	for i, t := range ts {
		start[i] = max(t.held, t.Min)
		if t.Max >= 0 {
			start[i] = min(start[i], t.Max)
		}
		names[i] = t.Name
	}
	return planner.AvoidDisruption(start, plan, names, seed)
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// capToFit lowers each simulated target's Max to the replicas that fit on
// its nodes (never below its minReplicas) and returns the maxima before
// (nil when no target is simulated: listed Static weights, no estimates).
func capToFit(ts []target) []int64 {
	var maxima []int64
	for i := range ts {
		if !ts[i].simulated {
			continue
		}
		if maxima == nil {
			maxima = make([]int64, len(ts))
			for j := range ts {
				maxima[j] = ts[j].Max
			}
		}
		// A minimum stands even beyond the room: the policy asks for it.
		if fit := max(ts[i].fit, ts[i].Min, 0); ts[i].Max < 0 || ts[i].Max > fit {
			ts[i].Max = fit
		}
	}
	return maxima
}

// gather puts n replicas that fit nowhere into one target rather than
// spreading Pending pods over all, so that one member's node autoscaler
// sees the whole demand: an elastic cluster (room.Elastic; the most node
// headroom first) before the others, then the one running most of the
// object, then the best ranked; within maxima (the targets' maxReplicas
// and capacity limits). What that target cannot take goes to the next.
func gather(n int64, plan []int64, ts []target, maxima []int64) {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if ts[a].elastic != ts[b].elastic {
			if ts[a].elastic {
				return -1
			}
			return 1
		}
		if ts[a].elastic && ts[a].headroom != ts[b].headroom {
			return cmp.Compare(ts[b].headroom, ts[a].headroom)
		}
		return cmp.Compare(ts[b].held, ts[a].held)
	})
	for _, i := range order {
		if n <= 0 {
			return
		}
		room := n
		if maxima[i] >= 0 {
			room = min(room, maxima[i]-plan[i])
		}
		if room > 0 {
			plan[i] += room
			n -= room
		}
	}
}
