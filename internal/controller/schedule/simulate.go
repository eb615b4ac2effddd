package schedule

import (
	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// simulation is one decision's use of the estimator: between begin and
// the reservation no other decision reads or changes the ledger, so two
// decisions never count the same free room.
type simulation struct {
	e      *estimate.Estimator
	u      *framework.Unit
	locked bool
	// remote: the profile calls out (a webhook), so the decision is not
	// serialised (a slow webhook would hold every other decision up); its
	// estimate may count room another decision is reserving meanwhile.
	remote bool
}

// restore reserves u's placement in force in the members with a
// node-level view that the ledger has nothing recorded for (once after a
// restart, or when a member's view comes back): its replicas may still be
// starting, and the reservations of the process before are lost.
func (r *Reconciler) restore(u *framework.Unit) {
	if r.Estimator != nil && r.Estimator.Unrestored(u) {
		r.Estimator.Restore(u)
	}
}

// begin locks the estimator for u's decision (unless remote). Without an
// estimator, or for an object without a pod template and replicas, it
// does nothing.
func (r *Reconciler) begin(u *framework.Unit, remote bool) *simulation {
	s := &simulation{e: r.Estimator, u: u}
	if s.e == nil || !estimate.Applies(u) {
		s.e = nil
		return s
	}
	s.remote = remote
	if !remote {
		s.e.Lock()
		s.locked = true
	}
	return s
}

// fill gives u its candidates' simulated room.
func (s *simulation) fill(candidates []*v1alpha1.MemberCluster) {
	if s.e != nil {
		s.e.Fill(s.u, candidates)
	}
}

// reserve records the placement about to be written and unlocks; the undo
// restores the ledger when the write fails.
func (s *simulation) reserve(placement []v1alpha1.ClusterPlacement) (undo func()) {
	switch {
	case s.e == nil:
		return func() {}
	case s.remote:
		s.e.Lock()
		defer s.e.Unlock()
	default:
		defer s.release()
	}
	// A variable of its own: the closure returned becomes undo, and one
	// that called undo would call itself and deadlock on the lock.
	reserved := s.e.Reserve(s.u, placement, false)
	return func() {
		s.e.Lock()
		defer s.e.Unlock()
		reserved()
	}
}

// release unlocks without reserving (a decision that writes nothing new).
func (s *simulation) release() {
	if s.locked {
		s.locked = false
		s.e.Unlock()
	}
}

// forget ends the reservations of a deleted object (key: its
// namespace/name).
func (r *Reconciler) forget(key string) {
	if r.Estimator != nil {
		r.Estimator.Forget(key)
	}
}
