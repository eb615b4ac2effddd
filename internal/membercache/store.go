package membercache

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// change is one recorded change of a kind: the state before (nil for an
// addition) and after (for a deletion: the last state at the deletion's
// resourceVersion).
type change struct {
	seq      uint64
	typ      watch.EventType
	old, new *Entry
}

// store holds one kind of every member.
type store struct {
	cache *Cache
	kind  *Kind
	codec *codec

	mu       sync.RWMutex
	objects  map[id]*Entry
	clusters map[string]int // entries per cluster
	last     uint64         // sequence of the latest change
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
		objects:  map[id]*Entry{},
		clusters: map[string]int{},
		history:  make([]change, c.opts.History),
		watchers: map[*Watcher]struct{}{},
		sources:  map[string]SourceState{},
	}
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
	if old != nil && old.memberRV == versionHash(m.GetResourceVersion()) {
		return nil
	}
	return s.put(cluster, obj, old)
}

// put stores obj under the lock, as a change from old.
func (s *store) put(cluster string, obj runtime.Object, old *Entry) error {
	seq := s.cache.seq.Add(1)
	e, err := s.cache.encode(s.kind, s.codec, cluster, obj, seq)
	if err != nil {
		return err
	}
	s.objects[e.id()] = e
	typ := watch.Modified
	if old == nil {
		typ = watch.Added
		s.clusters[cluster]++
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
func (s *store) remove(old *Entry) {
	seq := s.cache.seq.Add(1)
	delete(s.objects, old.id())
	if s.clusters[old.Cluster]--; s.clusters[old.Cluster] <= 0 {
		delete(s.clusters, old.Cluster)
	}
	s.record(change{seq: seq, typ: watch.Deleted, old: old, new: s.cache.withRV(old, seq)})
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
		if old != nil && old.memberRV == versionHash(m.GetResourceVersion()) {
			continue
		}
		if err := s.put(cluster, obj, old); err != nil && firstErr == nil {
			firstErr = err
		}
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
	for w := range s.watchers {
		if ev, ok := w.translate(c); ok {
			s.deliver(w, ev)
		}
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
