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
	books map[string]*book    // by cluster
	seen  map[string]struct{} // workloads recorded since start
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

// Placement is a decision's replicas per cluster.
type Placement map[string]int64

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
	if l.books == nil {
		l.books = map[string]*book{}
		l.seen = map[string]struct{}{}
	}
	b := l.books[cluster]
	if b == nil {
		b = &book{entries: map[string]*entry{}}
		l.books[cluster] = b
	}
	return b
}

// set replaces a workload's entry (nil: removes it), keeping the total.
// bound is the workload's bound pods in the cluster when known (-1: not
// known; the total is counted again at the next look).
func (b *book) set(workload string, e *entry, bound int32) {
	if old := b.entries[workload]; old != nil {
		add(&b.total, &old.per, -old.outstanding)
		b.replicas -= old.outstanding
		delete(b.entries, workload)
	}
	if e == nil {
		return
	}
	b.entries[workload] = e
	if bound < 0 {
		b.version = 0
		return
	}
	e.outstanding = max(e.want-int64(bound), 0)
	add(&b.total, &e.per, e.outstanding)
	b.replicas += e.outstanding
	if b.next.IsZero() || e.expires.Before(b.next) {
		b.next = e.expires
	}
}

// Reserve records a decision for workload (namespace/name): each cluster's
// replicas are expected to start there. bound gives the workload's bound
// pods per cluster where known (Fit.Bound); for the others they are
// counted at the next look. The workload's reservations in clusters left
// out end. A cluster whose count is unchanged keeps its reservation's
// deadline. It returns a function that restores what was there before
// (for a decision that could not be written).
func (l *Ledger) Reserve(workload string, per nodefit.Vector, placement Placement, bound map[string]int32) (undo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.books == nil {
		l.book("") // allocates the maps
		delete(l.books, "")
	}
	_, wasSeen := l.seen[workload]
	l.seen[workload] = struct{}{}
	before := map[string]entry{}
	for cluster, b := range l.books {
		if e, ok := b.entries[workload]; ok {
			before[cluster] = *e
			if _, kept := placement[cluster]; !kept {
				b.set(workload, nil, 0)
			}
		}
	}
	deadline := l.now().Add(l.timeout())
	for cluster, n := range placement {
		if old, ok := before[cluster]; ok && old.want == n {
			continue
		}
		b, ok := bound[cluster]
		if !ok {
			b = -1
		}
		l.book(cluster).set(workload, &entry{want: n, per: per, expires: deadline}, b)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !wasSeen {
			delete(l.seen, workload)
		}
		for cluster, b := range l.books {
			if _, ok := b.entries[workload]; ok {
				b.set(workload, nil, 0)
			}
			if e, ok := before[cluster]; ok {
				b.set(workload, &e, -1)
			}
		}
	}
}

// Forget ends a workload's reservations everywhere (its object is gone).
func (l *Ledger) Forget(workload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.books {
		if _, ok := b.entries[workload]; ok {
			b.set(workload, nil, 0)
		}
	}
	delete(l.seen, workload)
}

// Seen reports whether a decision for workload was recorded since the
// ledger started; the scheduler reserves a restored workload's placement
// once after a restart (Reserve) so that its replicas still starting are
// counted.
func (l *Ledger) Seen(workload string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.seen[workload]
	return ok
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
	total.CPU += per.CPU * n
	total.Memory += per.Memory * n
	total.Ephemeral += per.Ephemeral * n
	total.Pods += per.Pods * n
	for name, v := range per.Other {
		total.Add(name, v*n)
	}
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
				b.set(w, nil, 0)
				continue
			}
			if e.outstanding > 0 {
				t.Replicas += e.outstanding
				add(&t.Resources, &e.per, e.outstanding)
			}
		}
		out[cluster] = t
	}
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

// InReplicas converts reserved resources into replicas of a shape: the
// most replicas' worth any one resource (or the pod slots) holds, rounded
// up.
func InReplicas(reserved nodefit.Vector, s *nodefit.Shape) int64 {
	n := ceil(reserved.Pods, nodefit.PodAmount)
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
