// Package autoscale computes a federated HorizontalPodAutoscaler's
// recommendation (pure): the replicas a workload needs from resource
// usage summed over every member, with the Kubernetes HPA's rules (a
// ratio to the target, a tolerance of 10%, unready and unreported pods
// counted against the move, min and max, a scale-down stabilization
// window, a scale-up rate). The autoscale controller feeds it what the
// members' metrics.k8s.io report and writes the result to the host
// object's replicas, which the scheduler divides by the policy.
package autoscale

import (
	"fmt"
	"math"
	"time"
)

// Tolerance is how far from the target a ratio may be without a change
// (Kubernetes' default, --horizontal-pod-autoscaler-tolerance).
const Tolerance = 0.1

// Usage is one resource's usage of a workload in one member, or summed
// over members.
type Usage struct {
	// Ready counts the pods that report usage and are ready.
	Ready int32
	// Unready counts the pods that are not ready (starting): their usage
	// is not trusted.
	Unready int32
	// Missing counts the ready pods without metrics yet.
	Missing int32
	// Used is the ready pods' summed usage (millicores, bytes).
	Used int64
}

// Add sums usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{Ready: u.Ready + o.Ready, Unready: u.Unready + o.Unready, Missing: u.Missing + o.Missing, Used: u.Used + o.Used}
}

// Metric is one resource metric of an HPA with its usage.
type Metric struct {
	// Name is the resource (cpu, memory).
	Name string
	// Usage is the usage over all members.
	Usage Usage
	// PerPod is the target per pod: the request times the target
	// utilization for a Utilization target, or the AverageValue
	// (millicores, bytes).
	PerPod int64
	// MissingAt is what a pod without metrics counts as using when
	// scaling down (Kubernetes: the larger of the request and the target
	// for a Utilization target); 0 means PerPod.
	MissingAt int64
	// Invalid says why the metric cannot be computed, naming it (a type
	// a federated HPA does not read, a utilization without requests), ""
	// when it can. An invalid metric asks for the current replicas: as in
	// Kubernetes, it allows no scale-down, since what it measures may be
	// what is busy, while the others may still scale up.
	Invalid string
}

// Recommend returns the replicas one metric asks for, from current
// replicas, and a description. Pods that are not ready or report nothing
// count against the move: as using nothing when scaling up; when scaling
// down, pods without metrics as using the target (MissingAt when larger)
// and unready pods not at all (Kubernetes' rules), so a rollout or a slow
// metrics pipeline does not swing the workload.
func Recommend(m Metric, current int32) (int32, string) {
	u := m.Usage
	if m.Invalid != "" {
		return current, m.Invalid + " (it allows no scale-down)"
	}
	if m.PerPod <= 0 {
		return current, fmt.Sprintf("%s: no target per pod", m.Name)
	}
	if u.Ready == 0 {
		return current, fmt.Sprintf("%s: no ready pod reports usage", m.Name)
	}
	ratio := float64(u.Used) / float64(int64(u.Ready)*m.PerPod)
	desc := fmt.Sprintf("%s: %d%% of target over %d ready pods", m.Name, int64(math.Round(ratio*100)), u.Ready)
	if u.Missing+u.Unready > 0 {
		var used, pods float64 = float64(u.Used), float64(u.Ready)
		if ratio > 1 {
			pods += float64(u.Unready + u.Missing) // as using nothing
		} else {
			used += float64(int64(u.Missing) * max(m.MissingAt, m.PerPod)) // missing as at the target, at least
			pods += float64(u.Missing)
		}
		newRatio := used / (pods * float64(m.PerPod))
		if math.Abs(1-newRatio) <= Tolerance || (ratio > 1) != (newRatio > 1) {
			return current, desc + " (within tolerance once unready and unreported pods count)"
		}
		ratio = newRatio
		desc += fmt.Sprintf(", %d%% counting %d unready and %d unreported", int64(math.Round(ratio*100)), u.Unready, u.Missing)
	} else if math.Abs(1-ratio) <= Tolerance {
		return current, desc + " (within tolerance)"
	}
	pods := u.Ready + u.Missing
	if ratio > 1 {
		pods += u.Unready
	}
	// A target far below the usage (an averageValue of one byte, say)
	// gives a ratio past int32: the maximum bounds it later.
	want := int32(min(max(math.Ceil(ratio*float64(pods)), 0), math.MaxInt32))
	if (ratio < 1 && want > current) || (ratio > 1 && want < current) {
		return current, desc + " (the pods counted point the other way)"
	}
	return want, desc
}

// Decision is the outcome of one pass.
type Decision struct {
	// Replicas is what the workload should run.
	Replicas int32
	// Why describes the metrics and any limit that applied.
	Why string
	// Limited names the bound that capped the recommendation (min, max,
	// rate, stabilization, disabled), "" for none.
	Limited string
	// Down: the recommendation was below the current replicas (a limit
	// may have kept them).
	Down bool
}

// Recommendation is one past recommendation, kept for the stabilization
// window.
type Recommendation struct {
	At       time.Time
	Replicas int32
}

// Policy bounds the recommendation.
type Policy struct {
	Min, Max int32
	// DownWindow is the scale-down stabilization window: the highest
	// recommendation in it wins (default 300 s).
	DownWindow time.Duration
	// UpWindow is the scale-up stabilization window: the lowest
	// recommendation in it wins (default 0).
	UpWindow time.Duration
	// Up and Down are the scaling policies (behavior.*.policies and
	// selectPolicy); nil: Kubernetes' defaults (DefaultUp, DefaultDown).
	Up, Down *Rules
	// Legacy: the HPA has no behavior at all; Kubernetes then limits a
	// scale-up to double, or 4, per evaluation and a scale-down not at
	// all (Up and Down are ignored).
	Legacy bool
	// DownStep, when set, is the most percent of the replicas one change
	// may remove: the host's scale-down protection
	// (flotilla.io/scale-down-limit), which would refuse a larger step.
	DownStep *int32
}

// History is what Decide remembers of an HPA between passes.
type History struct {
	// Recommendations are the recent recommendations (the stabilization
	// windows).
	Recommendations []Recommendation
	// Events are the recent changes (the policies' periods).
	Events []Event
}

// Decide combines the metrics' recommendations (the highest wins), clamps
// them to min and max, applies the stabilization windows over the history
// and the scaling policies (Kubernetes' defaults: up by 4 pods or 100%
// per 15 s, down by up to 100%; without behavior, the legacy limit), and
// returns the decision and the history to keep, this change included
// (keep the old history if the change could not be made).
func Decide(metrics []Metric, current int32, p Policy, h History, now time.Time) (Decision, History) {
	if current > p.Max || current < p.Min {
		return outOfBounds(current, p, h, now)
	}
	want := int32(0)
	var why string
	for i, m := range metrics {
		r, d := Recommend(m, current)
		if i == 0 || r > want {
			want = r
		}
		if why != "" {
			why += "; "
		}
		why += d
	}
	if len(metrics) == 0 {
		want, why = current, "no metric"
	}
	d := Decision{Replicas: want, Why: why}
	switch {
	case d.Replicas < p.Min:
		d.Replicas, d.Limited = p.Min, "min"
	case d.Replicas > p.Max:
		d.Replicas, d.Limited = p.Max, "max"
	}
	up, down := DefaultUp, DefaultDown
	if p.Up != nil {
		up = *p.Up
	}
	if p.Down != nil {
		down = *p.Down
	}
	keep := h.Recommendations[:0:0]
	horizon := max(p.DownWindow, p.UpWindow)
	for _, r := range h.Recommendations {
		if now.Sub(r.At) <= horizon {
			keep = append(keep, r)
		}
	}
	keep = append(keep, Recommendation{At: now, Replicas: d.Replicas})
	stable := d.Replicas
	if stable < current {
		for _, r := range keep {
			if now.Sub(r.At) <= p.DownWindow && r.Replicas > stable {
				stable = r.Replicas
			}
		}
		stable = min(stable, current)
	} else if stable > current {
		for _, r := range keep {
			if now.Sub(r.At) <= p.UpWindow && r.Replicas < stable {
				stable = r.Replicas
			}
		}
		stable = max(stable, current)
	}
	if stable != d.Replicas && d.Limited == "" {
		d.Limited = "stabilization"
	}
	d.Replicas = stable
	d.Down = d.Replicas < current
	switch {
	case p.Legacy:
		if limit := legacyUpLimit(current); d.Replicas > limit {
			d.Replicas, d.Limited = limit, "rate"
		}
	case d.Replicas > current && up.Select == SelectDisabled, d.Replicas < current && down.Select == SelectDisabled:
		d.Replicas, d.Limited = current, "disabled"
	case d.Replicas > current:
		if limit := upLimit(up, current, h.Events, now); d.Replicas > limit {
			d.Replicas, d.Limited = max(limit, current), "rate"
		}
	case d.Replicas < current:
		if limit := downLimit(down, current, h.Events, now); d.Replicas < limit {
			d.Replicas, d.Limited = min(limit, current), "rate"
		}
	}
	d = protect(d, current, p)
	return d, History{Recommendations: keep, Events: changes(h.Events, current, d.Replicas, longest(up, down), now)}
}

// outOfBounds is the decision for current replicas outside min and max
// (the bounds were changed, or someone scaled the workload by hand): as
// in Kubernetes, straight to the bound, whatever the metrics, windows and
// rates say; only scale-down protection still bounds the step.
func outOfBounds(current int32, p Policy, h History, now time.Time) (Decision, History) {
	d := Decision{Replicas: p.Max, Limited: "max", Why: fmt.Sprintf("the current replicas (%d) are above the maximum (%d)", current, p.Max)}
	if current < p.Min {
		d = Decision{Replicas: p.Min, Limited: "min", Why: fmt.Sprintf("the current replicas (%d) are below the minimum (%d)", current, p.Min)}
	}
	d.Down = d.Replicas < current
	d = protect(d, current, p)
	up, down := DefaultUp, DefaultDown
	if p.Up != nil {
		up = *p.Up
	}
	if p.Down != nil {
		down = *p.Down
	}
	return d, History{Recommendations: h.Recommendations, Events: changes(h.Events, current, d.Replicas, longest(up, down), now)}
}

// protect keeps a scale-down within the host's scale-down protection
// (Policy.DownStep), which would refuse a larger step: the workload then
// goes down in steps, one per pass, instead of not at all.
func protect(d Decision, current int32, p Policy) Decision {
	if p.DownStep == nil || d.Replicas >= current {
		return d
	}
	floor := current - int32(int64(current)*int64(max(*p.DownStep, 0))/100)
	if d.Replicas < floor {
		d.Replicas, d.Limited = floor, "protection"
		d.Why += fmt.Sprintf("; at most %d%% of the replicas may go in one step (flotilla.io/scale-down-limit)", *p.DownStep)
	}
	return d
}

// changes keeps the events within period and adds this pass's change.
func changes(past []Event, current, replicas int32, period time.Duration, now time.Time) []Event {
	events := past[:0:0]
	for _, e := range past {
		if now.Sub(e.At) <= period {
			events = append(events, e)
		}
	}
	if replicas != current {
		events = append(events, Event{At: now, Change: replicas - current})
	}
	return events
}

// Seed is the history to start from: the current replicas, as if
// recommended now, so that a new HPA, or a controller that restarted,
// waits a whole scale-down window before scaling down (never early).
func Seed(current int32, now time.Time) History {
	return History{Recommendations: []Recommendation{{At: now, Replicas: current}}}
}
