package autoscale

import (
	"math"
	"time"
)

// Select is how an HPA's scaling policies combine (behavior.*.selectPolicy).
type Select string

// Values of Select.
const (
	// SelectMax allows the largest change any policy allows (the default).
	SelectMax Select = "Max"
	// SelectMin allows the smallest.
	SelectMin Select = "Min"
	// SelectDisabled allows none.
	SelectDisabled Select = "Disabled"
)

// Rate is one scaling policy: at most Value pods, or Value percent of the
// replicas at the start of the period, per Period.
type Rate struct {
	// Percent: Value is a percentage; otherwise a number of pods.
	Percent bool
	// Value is the change allowed per period.
	Value int32
	// Period is the window the change is counted over.
	Period time.Duration
}

// Rules bound changes one way: the policies and how they combine.
type Rules struct {
	Rates  []Rate
	Select Select
}

// Kubernetes' default rules: scale up by 4 pods or 100% per 15 s,
// whichever is more; scale down by up to 100% per 15 s.
var (
	DefaultUp   = Rules{Rates: []Rate{{Value: 4, Period: 15 * time.Second}, {Percent: true, Value: 100, Period: 15 * time.Second}}, Select: SelectMax}
	DefaultDown = Rules{Rates: []Rate{{Percent: true, Value: 100, Period: 15 * time.Second}}, Select: SelectMax}
)

// Event is one past change of the replicas made by the autoscaler (+ up,
// - down), kept for the policies' periods.
type Event struct {
	At     time.Time
	Change int32
}

// upLimit is the most replicas the rules allow now, from current and
// the changes within each policy's period (Kubernetes counts a period's
// change from the replicas at its start: current less what was added,
// plus what was removed, in it).
func upLimit(r Rules, current int32, events []Event, now time.Time) int32 {
	// A period's start can be below zero (the replicas were lowered by
	// hand after the autoscaler's own scale-up in it): its limit is then
	// below current, which Decide reads as no scale-up, as Kubernetes
	// does, not as no limit.
	limit, set := int32(0), false
	for _, rate := range r.Rates {
		start := periodStart(events, current, now, rate.Period)
		var allowed int32
		if rate.Percent {
			allowed = int32(min(math.Ceil(float64(start)*(1+float64(rate.Value)/100)), math.MaxInt32))
		} else {
			allowed = int32(min(int64(start)+int64(rate.Value), math.MaxInt32))
		}
		if !set || (r.Select == SelectMin && allowed < limit) || (r.Select != SelectMin && allowed > limit) {
			limit, set = allowed, true
		}
	}
	if !set {
		return math.MaxInt32
	}
	return limit
}

// downLimit is the fewest replicas the rules allow now.
func downLimit(r Rules, current int32, events []Event, now time.Time) int32 {
	limit := int32(-1)
	for _, rate := range r.Rates {
		start := periodStart(events, current, now, rate.Period)
		var allowed int32
		if rate.Percent {
			allowed = int32(float64(start) * (1 - float64(rate.Value)/100)) // truncated, as Kubernetes does
		} else {
			allowed = start - rate.Value
		}
		allowed = max(allowed, 0)
		if limit < 0 || (r.Select == SelectMin && allowed > limit) || (r.Select != SelectMin && allowed < limit) {
			limit = allowed
		}
	}
	if limit < 0 {
		return 0
	}
	return limit
}

// periodStart is the replicas at the start of a period: current less the
// changes within it.
func periodStart(events []Event, current int32, now time.Time, period time.Duration) int32 {
	start := current
	for _, e := range events {
		if now.Sub(e.At) <= period {
			start -= e.Change
		}
	}
	return start
}

// legacyUpLimit is Kubernetes' limit for an HPA without behavior: at most
// double, or 4, per evaluation; scaling down is not limited.
func legacyUpLimit(current int32) int32 {
	return max(2*current, 4)
}

// longest is the longest period of the rules, how long events are kept.
func longest(rs ...Rules) time.Duration {
	var d time.Duration
	for _, r := range rs {
		for _, rate := range r.Rates {
			d = max(d, rate.Period)
		}
	}
	return d
}
