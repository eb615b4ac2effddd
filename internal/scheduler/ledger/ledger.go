// Package ledger is the scheduler's global resource ledger: replicas a
// decision placed in a member but the member has not started yet (no pod
// bound to a node) are reserved against that member's room, so decisions
// taken a moment apart do not both count the same free capacity. A
// reservation ends when the workload's pods are bound in the member, when
// a later decision replaces it, or when it times out (the replicas did not
// start: the member cannot place them, and application failover takes
// over).
package ledger

import (
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// DefaultTimeout is how long a reservation holds at most.
const DefaultTimeout = 2 * time.Minute

// Ledger holds reservations per member cluster and workload. It is safe
// for concurrent use.
type Ledger struct {
	// Timeout is how long a reservation holds at most (DefaultTimeout when
	// zero).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	books map[string]*book // by cluster
	// recorded holds, per workload, the replicas of its last recorded
	// decision in each cluster the decision had a node-level view of.
	recorded map[string]map[string]int64
}

// book is one cluster's reservations and their running total. The total
// holds for the member state version it was counted against: while the
// member's pods do not change, a look costs O(1); after they changed,
// every reservation of the cluster is counted again.
type book struct {
	entries  map[string]*entry // by workload
	total    nodefit.Vector
	replicas int64
	version  uint64    // member state version of total; 0: count again
	next     time.Time // earliest deadline among entries
}

type entry struct {
	want        int64          // replicas the decision placed there
	per         nodefit.Vector // one replica's requests and pod slot
	expires     time.Time
	outstanding int64 // want less the bound pods, as counted in total
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Ledger) timeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return DefaultTimeout
}

// PerReplica turns one replica's requests into the vector a reservation
// holds: the requests and one pod slot.
func PerReplica(requests []nodefit.Request) nodefit.Vector {
	v := nodefit.Vector{Pods: nodefit.PodAmount}
	for _, r := range requests {
		v.Add(r.Name, r.Amount)
	}
	return v
}

func (l *Ledger) book(cluster string) *book {
	b := l.books[cluster]
	if b == nil {
		b = &book{entries: map[string]*entry{}}
		l.books[cluster] = b
	}
	return b
}

// set replaces a workload's entry (nil: removes it), keeping the total.
// obs is what the decision saw of the workload's bound pods there; when it
// was not seen, or at another member state than the total's, the total is
// counted again at the next look.
func (b *book) set(workload string, e *entry, obs Observed) {
	if old := b.entries[workload]; old != nil {
		add(&b.total, &old.per, -old.outstanding)
		b.replicas -= old.outstanding
		delete(b.entries, workload)
	}
	if e == nil {
		return
	}
	if !obs.Known || obs.Version != b.version {
		b.entries[workload] = e
		b.version = 0
		return
	}
	e.outstanding = e.want - int64(obs.Bound)
	if e.outstanding <= 0 {
		return // its pods are all bound already: nothing to hold
	}
	b.entries[workload] = e
	add(&b.total, &e.per, e.outstanding)
	b.replicas += e.outstanding
	if b.next.IsZero() || e.expires.Before(b.next) {
		b.next = e.expires
	}
}

// Observed is what a decision saw of a workload in a member.
type Observed struct {
	// Known says the member has a node-level view and the rest is set.
	Known bool
	// Bound is the workload's bound pods there.
	Bound int32
	// Version is the member state version they were counted at.
	Version uint64
}

// Count is a decision's replicas in one cluster.
type Count struct {
	// Replicas placed there.
	Replicas int64
	// Fresh says the count is new in this decision (it differs from the
	// count last recorded there, or the placement is being restored after
	// a restart). Only a fresh count starts a reservation: one that ended
	// (bound, or timed out) is not started again by a decision that keeps
	// the same count.
	Fresh bool
	// Keep says the decision has no node-level view of the cluster (a
	// member reconnecting, its caches filling): what the ledger holds
	// there for the workload stays as it is.
	Keep bool
	// Observed is what the decision saw there.
	Observed Observed
}

// Reserve records a decision for workload (member.WorkloadKey): each cluster's
// replicas are expected to start there. The workload's reservations in
// clusters left out end. A cluster whose count and per-replica vector are
// unchanged keeps its reservation and deadline; one whose count is not
// fresh keeps its deadline and takes the new vector. It returns a function
// that restores what was there before (for a decision that could not be
// written).
func (l *Ledger) Reserve(workload string, per nodefit.Vector, placement map[string]Count) (undo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.books == nil {
		l.books = map[string]*book{}
		l.recorded = map[string]map[string]int64{}
	}
	prevRecord, wasRecorded := l.recorded[workload]
	before := map[string]entry{}
	for cluster, b := range l.books {
		if e, ok := b.entries[workload]; ok {
			before[cluster] = *e
			if _, kept := placement[cluster]; !kept {
				b.set(workload, nil, Observed{})
			}
		}
	}
	record := make(map[string]int64, len(placement))
	for cluster := range prevRecord {
		if _, in := placement[cluster]; !in {
			record[cluster] = Left
		}
	}
	deadline := l.now().Add(l.timeout())
	for cluster, c := range placement {
		if c.Keep {
			// The record stands for the count it says; a count changed
			// while the member was out of view is unrecorded, so that it
			// is restored when the view comes back.
			if n, ok := prevRecord[cluster]; ok && n == c.Replicas {
				record[cluster] = n
			}
			continue
		}
		record[cluster] = c.Replicas
		old, had := before[cluster]
		switch {
		case had && old.want == c.Replicas && old.per.Equal(&per):
			// Unchanged: it keeps its deadline.
		case c.Fresh:
			l.book(cluster).set(workload, &entry{want: c.Replicas, per: per, expires: deadline}, c.Observed)
		case had:
			// The count in force, with another per-replica vector (a new
			// pod template): the same replicas are starting, so the
			// reservation holds what they request, until its deadline.
			l.book(cluster).set(workload, &entry{want: c.Replicas, per: per, expires: old.expires}, c.Observed)
		}
	}
	l.recorded[workload] = record
	l.prune()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if wasRecorded {
			l.recorded[workload] = prevRecord
		} else {
			delete(l.recorded, workload)
		}
		for cluster, b := range l.books {
			if _, ok := b.entries[workload]; ok {
				b.set(workload, nil, Observed{})
			}
			if e, ok := before[cluster]; ok {
				b.set(workload, &e, Observed{})
			}
		}
		for cluster, e := range before {
			if l.books[cluster] == nil {
				l.book(cluster).set(workload, &e, Observed{})
			}
		}
	}
}

// prune drops the books of clusters without reservations.
func (l *Ledger) prune() {
	for cluster, b := range l.books {
		if len(b.entries) == 0 {
			delete(l.books, cluster)
		}
	}
}

// Forget ends a workload's reservations everywhere (its object is gone).
func (l *Ledger) Forget(workload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.books {
		if _, ok := b.entries[workload]; ok {
			b.set(workload, nil, Observed{})
		}
	}
	delete(l.recorded, workload)
	l.prune()
}

// Left is the record of a cluster the workload's last decision left out
// after one had placed it there.
const Left = -1

// Recorded returns the replicas of the last decision recorded for
// workload in cluster since the ledger started (Left if a decision left
// the cluster since), and whether there was one made with a node-level
// view of the cluster. The scheduler reserves a placement it finds
// unrecorded once (after a restart, or when a member's view returns), so
// that its replicas still starting are counted; a cluster a decision left
// is not restored from a placement read before that decision was.
func (l *Ledger) Recorded(workload, cluster string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.recorded[workload][cluster]
	return n, ok
}

// Records returns a copy of the workload's records by cluster (see
// Recorded).
func (l *Ledger) Records(workload string) map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.recorded[workload])
}

// Reserved returns what a cluster holds for workloads other than except:
// each reservation's replicas not bound yet (bound counts a workload's
// bound pods in the cluster) times its per-replica vector, and their
// number. version identifies the member's pod state that bound reads:
// while it is the one of the last look, the running total stands.
// Reservations fully bound or past their deadline end when counted.
func (l *Ledger) Reserved(cluster, except string, bound func(workload string) int32, version uint64) (nodefit.Vector, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.books[cluster]
	if b == nil {
		return nodefit.Vector{}, 0
	}
	now := l.now()
	if b.version == 0 || b.version != version || !b.next.IsZero() && now.After(b.next) {
		b.recount(bound, now)
		b.version = version
	}
	total, replicas := b.total, b.replicas
	if e := b.entries[except]; e != nil && e.outstanding > 0 {
		total = minus(total, &e.per, e.outstanding)
		replicas -= e.outstanding
	}
	return total, replicas
}

// recount counts every reservation of the cluster again.
func (b *book) recount(bound func(string) int32, now time.Time) {
	b.total, b.replicas, b.next = nodefit.Vector{}, 0, time.Time{}
	for w, e := range b.entries {
		e.outstanding = e.want - int64(bound(w))
		if e.outstanding <= 0 || now.After(e.expires) {
			delete(b.entries, w)
			continue
		}
		add(&b.total, &e.per, e.outstanding)
		b.replicas += e.outstanding
		if b.next.IsZero() || e.expires.Before(b.next) {
			b.next = e.expires
		}
	}
}

func minus(total nodefit.Vector, per *nodefit.Vector, n int64) nodefit.Vector {
	out := total
	out.Other = nil
	for name, v := range total.Other {
		out.Add(name, v)
	}
	add(&out, per, -n)
	return out
}

func add(total, per *nodefit.Vector, n int64) {
	total.CPU += scaled(per.CPU, n)
	total.Memory += scaled(per.Memory, n)
	total.Ephemeral += scaled(per.Ephemeral, n)
	total.Pods += scaled(per.Pods, n)
	for name, v := range per.Other {
		total.Add(name, scaled(v, n))
	}
}

// maxHeld bounds one reservation's amount of a resource, so that no
// replica count times request (an object of two billion replicas asking
// for terabytes each) overflows: far beyond any member's room, it still
// displaces everything. Adding and removing an entry use the same bound,
// so running totals stay exact.
const maxHeld = nodefit.MaxAmount

// scaled is v*n, its magnitude at most maxHeld; scaled(v, -n) is
// -scaled(v, n).
func scaled(v, n int64) int64 {
	if v == 0 || n == 0 {
		return 0
	}
	neg := (v < 0) != (n < 0)
	if v < 0 {
		v = -v
	}
	if n < 0 {
		n = -n
	}
	p := maxHeld
	if v <= maxHeld/n {
		p = min(v*n, maxHeld)
	}
	if neg {
		return -p
	}
	return p
}

// Totals returns each cluster's outstanding reservations as last counted
// (for metrics); reservations past their deadline are left out.
func (l *Ledger) Totals() map[string]Total {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Total, len(l.books))
	now := l.now()
	for cluster, b := range l.books {
		var t Total
		for w, e := range b.entries {
			if now.After(e.expires) {
				b.set(w, nil, Observed{})
				continue
			}
			if e.outstanding > 0 {
				t.Replicas += e.outstanding
				add(&t.Resources, &e.per, e.outstanding)
			}
		}
		out[cluster] = t
	}
	l.prune()
	return out
}

// Total is a cluster's outstanding reservations.
type Total struct {
	// Replicas reserved and not started yet.
	Replicas int64
	// Resources they hold.
	Resources nodefit.Vector
}

// ResourceList returns the resources as quantities (pods as a count).
func (t Total) ResourceList() corev1.ResourceList {
	if t.Replicas == 0 {
		return nil
	}
	list := corev1.ResourceList{}
	put := func(name corev1.ResourceName, v int64) {
		if v > 0 {
			list[name] = nodefit.Quantity(name, v)
		}
	}
	put(corev1.ResourceCPU, t.Resources.CPU)
	put(corev1.ResourceMemory, t.Resources.Memory)
	put(corev1.ResourceEphemeralStorage, t.Resources.Ephemeral)
	put(corev1.ResourcePods, t.Resources.Pods)
	for name, v := range t.Resources.Other {
		put(name, v)
	}
	return list
}

// Displaced returns how many replicas of a shape the reservations take
// from a member's estimate res: for each requested resource, the reserved
// amount in replicas of the shape (rounded up), the most of them; pod
// slots count only beyond the slots the shape's replicas leave free, so
// many small reserved pods do not hide the room of a large one.
func Displaced(reserved nodefit.Vector, res nodefit.Result, s *nodefit.Shape) int64 {
	n := max(ceil(reserved.Pods, nodefit.PodAmount)-max(res.FreePods-res.Replicas, 0), 0)
	for _, r := range s.Requests {
		n = max(n, ceil(reserved.Get(r.Name), r.Amount))
	}
	return n
}

func ceil(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
