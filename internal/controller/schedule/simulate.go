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
}

// restore reserves, once after a restart, u's current placement: its
// replicas may still be starting, and the reservations of the process
// before are lost. A reservation whose pods are bound ends at the next
// look (ledger.Reserved).
func (r *Reconciler) restore(u *framework.Unit) {
	if r.Estimator == nil || !estimate.Applies(u) || r.Estimator.Ledger.Seen(estimate.Workload(u)) {
		return
	}
	r.Estimator.Lock()
	defer r.Estimator.Unlock()
	if !r.Estimator.Ledger.Seen(estimate.Workload(u)) {
		r.Estimator.Reserve(u, u.Current)
	}
}

// begin locks the estimator for u's decision. Without an estimator, or for
// an object without a pod template and replicas, it does nothing.
func (r *Reconciler) begin(u *framework.Unit) *simulation {
	s := &simulation{e: r.Estimator, u: u}
	if s.e == nil || !estimate.Applies(u) {
		return s
	}
	s.e.Lock()
	s.locked = true
	return s
}

// fill gives u its candidates' simulated room.
func (s *simulation) fill(candidates []*v1alpha1.MemberCluster) {
	if s.locked {
		s.e.Fill(s.u, candidates)
	}
}

// reserve records the placement about to be written and unlocks; the undo
// restores the ledger when the write fails.
func (s *simulation) reserve(placement []v1alpha1.ClusterPlacement) (undo func()) {
	if !s.locked {
		return func() {}
	}
	undo = s.e.Reserve(s.u, placement)
	s.release()
	return undo
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
