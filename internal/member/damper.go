package member

import "time"

// Health is the coarse state of a member as the health probe sees it.
type Health string

// Health states.
const (
	// Healthy: the apiserver answers /readyz with ok and accepts the
	// credentials.
	Healthy Health = "Healthy"
	// NotReady: the apiserver answers but is not ready or refuses the
	// credentials, or the credentials cannot be used at all.
	NotReady Health = "NotReady"
	// Unreachable: the apiserver cannot be contacted (connection refused,
	// timeout, TLS failure).
	Unreachable Health = "Unreachable"
)

// Observation is the result of one health probe.
type Observation struct {
	// Health is the probed state.
	Health Health
	// Reason is a CamelCase reason for the state, for conditions and events.
	Reason string
	// Message explains the state to a human.
	Message string
	// At is when the probe finished.
	At time.Time
}

// Damper turns a stream of observations into a stable state: a different
// state is committed only after every observation for Threshold agreed on
// it, so a member that flaps does not flip its condition (and the
// scheduler's view) on each probe. Leaving Healthy and returning to Healthy
// have separate thresholds; while leaving Healthy, every not-healthy
// observation agrees, whichever way the member fails. The zero value commits
// the first observation at once. Damper is not safe for concurrent use.
type Damper struct {
	// FailureThreshold is how long a not-healthy state must persist before a
	// Healthy member leaves Healthy.
	FailureThreshold time.Duration
	// SuccessThreshold is how long Healthy must persist before a member that
	// is not Healthy becomes Healthy again.
	SuccessThreshold time.Duration

	committed *Observation
	pending   *Observation // first observation of the state waiting to commit
}

// NewDamper returns a damper whose committed state starts as initial (the
// state recorded in status by an earlier run), or empty when initial is nil.
func NewDamper(failure, success time.Duration, initial *Observation) *Damper {
	d := &Damper{FailureThreshold: failure, SuccessThreshold: success}
	if initial != nil {
		o := *initial
		d.committed = &o
	}
	return d
}

// Observe records an observation and returns the committed observation and
// whether it changed. Within the committed state, a new reason counts as a
// change (at once) but a new message for the same reason does not, so that
// error texts that vary do not cause writes.
func (d *Damper) Observe(o Observation) (Observation, bool) {
	switch {
	case d.committed == nil:
		d.commit(o)
		return *d.committed, true
	case o.Health == d.committed.Health:
		d.pending = nil
		if o.Reason != d.committed.Reason {
			d.commit(o)
			return *d.committed, true
		}
		return *d.committed, false
	case d.pending != nil && d.pending.Health != Healthy && o.Health != Healthy && d.pending.Health != o.Health:
		// Still failing since pending.At, in another way (for example a
		// crash-looping apiserver that answers 500 and then refuses
		// connections): the failure persists, so keep counting from its
		// start instead of never leaving Healthy.
		p := o
		p.At = d.pending.At
		d.pending = &p
	case d.pending == nil || d.pending.Health != o.Health:
		d.pending = &o
	}
	if o.At.Sub(d.pending.At) >= d.threshold(o.Health) {
		d.commit(o)
		return *d.committed, true
	}
	return *d.committed, false
}

// Committed returns the committed observation, if any.
func (d *Damper) Committed() (Observation, bool) {
	if d.committed == nil {
		return Observation{}, false
	}
	return *d.committed, true
}

// PendingFor returns the state waiting to be committed and how long after
// now it commits if every probe until then agrees.
func (d *Damper) PendingFor(now time.Time) (Health, time.Duration, bool) {
	if d.pending == nil {
		return "", 0, false
	}
	return d.pending.Health, max(0, d.threshold(d.pending.Health)-now.Sub(d.pending.At)), true
}

func (d *Damper) threshold(h Health) time.Duration {
	if h == Healthy {
		return d.SuccessThreshold
	}
	return d.FailureThreshold
}

func (d *Damper) commit(o Observation) {
	d.committed = &o
	d.pending = nil
}
