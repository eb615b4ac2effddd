package propagate

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/recovery"
)

// flights are the member writes in progress. A reconcile waits for a write
// only briefly (waitBudget); a write that takes longer (a slow or hung
// member) goes on in the background and wakes its FederatedObject when it
// ends, so that one slow member never holds a worker, or the other
// members' copies, for the length of its timeout.
type flights struct {
	mu sync.Mutex
	m  map[flightKey]*flight
}

type flightKey struct {
	fo      types.NamespacedName
	cluster string
}

type flight struct {
	what string // the intent written (the rendered object's hash, options, template generation), to spot stale results
	done chan struct{}

	mu       sync.Mutex
	res      result
	finished bool
	detached bool // nobody waits: wake the FederatedObject when done
}

// run returns job's result for (fo, cluster) when it ends within wait.
// Otherwise ok is false, job goes on, and wake is called when it ends; the
// next run for the same key with the same intent returns its result
// without writing again, unless that result was Pending (see reusable).
// While a job runs, run starts no other for the key.
func (f *flights) run(k flightKey, what string, wait time.Duration, job func() result, wake func()) (res result, ok bool) {
	f.mu.Lock()
	if f.m == nil {
		f.m = map[flightKey]*flight{}
	}
	if fl, exists := f.m[k]; exists {
		fl.mu.Lock()
		finished := fl.finished
		fl.mu.Unlock()
		if !finished {
			f.mu.Unlock()
			return result{}, false
		}
		delete(f.m, k)
		if fl.what == what && reusable(fl.res) {
			f.mu.Unlock()
			return fl.res, true
		}
	}
	fl := &flight{what: what, done: make(chan struct{})}
	f.m[k] = fl
	f.mu.Unlock()

	go func() {
		res := guard(k, job)
		fl.mu.Lock()
		fl.res, fl.finished = res, true
		detached := fl.detached
		fl.mu.Unlock()
		close(fl.done)
		if detached {
			wake()
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-fl.done:
	case <-timer.C:
		fl.mu.Lock()
		if !fl.finished {
			fl.detached = true
			fl.mu.Unlock()
			return result{}, false
		}
		fl.mu.Unlock()
	}
	f.mu.Lock()
	if f.m[k] == fl {
		delete(f.m, k)
	}
	f.mu.Unlock()
	return fl.res, true
}

// reusable reports whether a detached job's finished result may be
// collected instead of running the job again. A Pending result may not: it
// waits for news from outside the write (a pull agent's report on the
// intent), and that news may have come while the job ran. Its event then
// found the job in flight, or merged with the wake-up, and was spent on
// collecting this result; reused, the result would stand until something
// else touched the object (nothing requeues a Pending result). Running
// the job again costs one cache lookup when the write is done. Other
// results are requeued or final; an event merged with the wake-up of a
// push member's write (drift in the copy just written) is met again by
// the next event or resync of that copy.
func reusable(res result) bool {
	return res.status.Reason != v1alpha1.PropagationPending
}

// guard runs job; a panic in it is recovered (logged with its stack and
// counted in flotilla_recovered_panics_total{component="propagate"}) and
// becomes an ApplyFailed result for the cluster, retried like any failed
// write, instead of killing the process.
func guard(k flightKey, job func() result) (res result) {
	logger := ctrl.Log.WithName(Name).WithValues("federatedObject", k.fo, "cluster", k.cluster)
	if err := recovery.Run(logger, Name, func() { res = job() }); err != nil {
		return result{status: v1alpha1.ClusterPropagationStatus{Cluster: k.cluster, Reason: v1alpha1.PropagationApplyFailed, Message: err.Error()}}
	}
	return res
}

// waitBudget is how long a reconcile waits for one member's write.
func (r *Reconciler) waitBudget() time.Duration {
	if r.WaitBudget > 0 {
		return r.WaitBudget
	}
	return 2 * time.Second
}

// wake returns a function that enqueues a FederatedObject.
func (r *Reconciler) wake(fo types.NamespacedName) func() {
	return func() { r.queue.Add(reconcile.Request{NamespacedName: fo}) }
}
