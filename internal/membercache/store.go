package membercache

import (
	"sync"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// change is one recorded change of a kind: the state before (nil for an
// addition) and after (for a deletion: the last state, carrying its own
// earlier resourceVersion; Cache.EventEntry gives it at the deletion's
// when a watch event is written, outside the store's lock, once for all
// the watchers of a live change: the history keeps no such copy, and a
// watch resumed from it makes its own).
type change struct {
	seq      uint64
	typ      watch.EventType
	old, new *Entry
}

// atRV is an entry at another resourceVersion, made on first use.
type atRV struct {
	once sync.Once
	src  *Entry
	rv   uint64
	out  *Entry
}

// get returns src at rv.
func (a *atRV) get(c *Cache) *Entry {
	a.once.Do(func() { a.out = c.withRV(a.src, a.rv) })
	return a.out
}

// store holds one kind of every member.
type store struct {
	cache *Cache
	kind  *Kind
	codec *codec

	mu      sync.RWMutex
	objects map[id]*Entry
	// order holds the same entries in list order (namespace, name,
	// cluster): a page, or one namespace's objects, is read from it
	// without visiting or sorting the rest.
	order    *btree.BTreeG[*Entry]
	clusters map[string]int // entries per cluster
	// namespaces counts the entries per namespace (a list's
	// remainingItemCount).
	namespaces map[string]int
	last       uint64 // sequence of the latest change
	// history is a ring of the latest changes; horizon is the sequence of
	// the newest change that fell out of it: a watch may resume from any
	// resourceVersion at or after it.
	history  []change
	head, n  int
	horizon  uint64
	watchers map[*Watcher]struct{}
	sources  map[string]SourceState
}

func newStore(c *Cache, k *Kind) *store {
	return &store{
		cache: c, kind: k, codec: newCodec(k),
		objects:    map[id]*Entry{},
		order:      btree.NewG(orderDegree, entryLess),
		clusters:   map[string]int{},
		namespaces: map[string]int{},
		history:    make([]change, c.opts.History),
		watchers:   map[*Watcher]struct{}{},
		sources:    map[string]SourceState{},
	}
}

// orderDegree is the degree of a store's ordered index (nodes of up to
// 2×32−1 entries: a few pointer hops for 100,000 objects).
const orderDegree = 32

// entryLess is the list order of entries.
func entryLess(a, b *Entry) bool { return a.compare(b.Namespace, b.Name, b.Cluster) < 0 }

// ascend calls fn, under the lock, with the entries of namespace (every
// namespace if "") that sort after the position after (namespace, name,
// cluster; nil: from the start), in list order, until fn returns false.
func (s *store) ascend(namespace string, after []string, fn func(*Entry) bool) {
	pivot := &Entry{Namespace: namespace}
	exclusive := false
	if after != nil && (namespace == "" || after[0] >= namespace) {
		pivot = &Entry{Namespace: after[0], Name: after[1], Cluster: after[2]}
		exclusive = true
	}
	s.order.AscendGreaterOrEqual(pivot, func(e *Entry) bool {
		switch {
		case namespace != "" && e.Namespace != namespace:
			return false // past the namespace
		case exclusive && e.compare(pivot.Namespace, pivot.Name, pivot.Cluster) == 0:
			return true // the previous page's last
		}
		return fn(e)
	})
}

// live reports whether the feed writing is still current; a feed that
// was stopped (its member left or was replaced) must not write again.
// nil: always.
type live func() bool

func (l live) ok() bool { return l == nil || l() }

func (s *store) set(cluster string, obj runtime.Object, alive live) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	key := id{cluster, m.GetNamespace(), m.GetName()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !alive.ok() {
		return nil
	}
	old := s.objects[key]
	if old.same(m) {
		return nil
	}
	return s.put(cluster, obj, old)
}

// same reports whether e is the member's object m as it is (its UID and
// resourceVersion); false for no entry.
func (e *Entry) same(m metav1.Object) bool {
	return e != nil && e.memberRV == versionHash(m.GetResourceVersion()) && e.uid == versionHash(string(m.GetUID()))
}

// put stores obj under the lock, as a change from old. An object that
// replaced old under the same name (another UID: deleted and created
// again while the feed did not watch) is old's deletion and its own
// addition, as kube-apiserver sends them, not a modification.
func (s *store) put(cluster string, obj runtime.Object, old *Entry) error {
	var replacedAt uint64 // the old object's deletion comes first
	if m, err := meta.Accessor(obj); err == nil && old != nil && old.uid != versionHash(string(m.GetUID())) {
		replacedAt = s.cache.seq.Add(1)
	}
	seq := s.cache.seq.Add(1)
	e, err := s.cache.encode(s.kind, s.codec, cluster, obj, seq)
	if err != nil {
		return err // what was cached stays
	}
	if replacedAt != 0 {
		s.removeAt(old, replacedAt)
		old = nil
	}
	s.objects[e.id()] = e
	s.order.ReplaceOrInsert(e)
	typ := watch.Modified
	if old == nil {
		typ = watch.Added
		s.clusters[cluster]++
		s.namespaces[e.Namespace]++
	}
	s.record(change{seq: seq, typ: typ, old: old, new: e})
	return nil
}

func (s *store) delete(cluster string, obj runtime.Object, alive live) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !alive.ok() {
		return nil
	}
	if old := s.objects[id{cluster, m.GetNamespace(), m.GetName()}]; old != nil {
		s.remove(old)
	}
	return nil
}

// remove deletes old under the lock.
func (s *store) remove(old *Entry) { s.removeAt(old, s.cache.seq.Add(1)) }

// removeAt deletes old under the lock as the change seq.
func (s *store) removeAt(old *Entry, seq uint64) {
	delete(s.objects, old.id())
	s.order.Delete(old)
	if s.clusters[old.Cluster]--; s.clusters[old.Cluster] <= 0 {
		delete(s.clusters, old.Cluster)
	}
	if s.namespaces[old.Namespace]--; s.namespaces[old.Namespace] <= 0 {
		delete(s.namespaces, old.Namespace)
	}
	s.record(change{seq: seq, typ: watch.Deleted, old: old, new: old})
}

func (s *store) replace(cluster string, objs []runtime.Object, alive live) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !alive.ok() {
		return nil
	}
	seen := make(map[id]bool, len(objs))
	var firstErr error
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		key := id{cluster, m.GetNamespace(), m.GetName()}
		seen[key] = true
		old := s.objects[key]
		if old.same(m) {
			continue
		}
		if err := s.put(cluster, obj, old); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	present := 0
	for key := range seen {
		if s.objects[key] != nil {
			present++
		}
	}
	if s.clusters[cluster] == present {
		// Every entry of the member was in the list (the usual relist):
		// nothing went, and the other members' entries need no look.
		return firstErr
	}
	for key, e := range s.objects {
		if key.cluster == cluster && !seen[key] {
			s.remove(e)
		}
	}
	return firstErr
}

// record appends c to the history and hands it to the watchers, under
// the lock.
func (s *store) record(c change) {
	s.last = c.seq
	if len(s.history) > 0 {
		if s.n == len(s.history) {
			s.horizon = s.history[s.head].seq
			s.head = (s.head + 1) % len(s.history)
			s.n--
		}
		s.history[(s.head+s.n)%len(s.history)] = c
		s.n++
	}
	var leaving *atRV // made for the first watcher the object leaves
	for w := range s.watchers {
		ev, ok := w.translate(c)
		if !ok {
			continue
		}
		if ev.Type == watch.Deleted && ev.Entry.RV != ev.RV {
			if leaving == nil {
				leaving = &atRV{src: ev.Entry, rv: ev.RV}
			}
			ev.leaving = leaving
		}
		s.deliver(w, ev)
	}
}

// deliver queues ev for w, under the lock; a watcher that fell too far
// behind is ended (it resumes from its last resourceVersion).
func (s *store) deliver(w *Watcher, ev Event) {
	select {
	case w.ch <- ev:
	default:
		delete(s.watchers, w)
		close(w.ch)
	}
}
