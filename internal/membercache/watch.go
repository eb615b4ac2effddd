package membercache

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions ask for a watch.
type WatchOptions struct {
	Filter
	// RV is where the watch starts: "" or "0" sends the current objects
	// as additions first; a resourceVersion the cache issued resumes
	// right after it.
	RV string
	// SendInitialEvents sends the current objects as additions, then a
	// bookmark that marks their end (client-go's watch-list).
	SendInitialEvents bool
}

// Watcher is one watch of a kind.
type Watcher struct {
	// Backlog is what the watch sends before its live events: the
	// current objects or the changes since the resourceVersion it
	// resumes from.
	Backlog []Event

	ch     chan Event
	filter Filter
	store  *store
}

// Events delivers the live events; it is closed when the watcher is
// stopped or fell too far behind.
func (w *Watcher) Events() <-chan Event { return w.ch }

// Stop ends the watch.
func (w *Watcher) Stop() {
	s := w.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		delete(s.watchers, w)
		close(w.ch)
	}
}

// Bookmark queues a bookmark at the kind's latest resourceVersion: every
// event before it has been queued already.
func (w *Watcher) Bookmark() {
	s := w.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		s.deliver(w, Event{Type: watch.Bookmark, RV: s.last})
	}
}

// Watch starts a watch of gr. It returns ErrExpired for a resourceVersion
// the cache cannot resume from.
func (c *Cache) Watch(gr schema.GroupResource, o WatchOptions) (*Watcher, error) {
	s, err := c.store(gr)
	if err != nil {
		return nil, err
	}
	w := &Watcher{ch: make(chan Event, c.opts.WatchBuffer), filter: o.Filter, store: s}
	var since uint64
	resume := !o.SendInitialEvents && o.RV != "" && o.RV != "0"
	if resume {
		seq, ok := c.ParseRV(o.RV)
		if !ok {
			return nil, ErrExpired
		}
		since = seq
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case resume && since < s.horizon:
		return nil, ErrExpired
	case resume:
		for i := 0; i < s.n; i++ {
			ch := s.history[(s.head+i)%len(s.history)]
			if ch.seq <= since {
				continue
			}
			if ev, ok := w.translate(ch); ok {
				w.Backlog = append(w.Backlog, ev)
			}
		}
	default:
		s.ascend(o.Namespace, nil, func(e *Entry) bool {
			if o.Matches(e) {
				w.Backlog = append(w.Backlog, Event{Type: watch.Added, Entry: e, RV: e.RV})
			}
			return true
		})
		if o.SendInitialEvents {
			w.Backlog = append(w.Backlog, Event{Type: watch.Bookmark, RV: s.last, InitialEventsEnd: true})
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

// translate turns a change into what this watcher sees: an object that
// starts matching its filter is added, one that stops matching is
// deleted (with its last matching state).
func (w *Watcher) translate(c change) (Event, bool) {
	oldM := w.filter.Matches(c.old)
	newM := c.typ != watch.Deleted && w.filter.Matches(c.new)
	switch {
	case c.typ == watch.Deleted && oldM:
		return Event{Type: watch.Deleted, Entry: c.new, RV: c.seq}, true
	case c.typ == watch.Deleted:
		return Event{}, false
	case oldM && newM:
		return Event{Type: watch.Modified, Entry: c.new, RV: c.seq}, true
	case newM:
		return Event{Type: watch.Added, Entry: c.new, RV: c.seq}, true
	case oldM:
		// As kube-apiserver does: the last state the watcher could see,
		// at the change's resourceVersion (Cache.EventEntry).
		return Event{Type: watch.Deleted, Entry: c.old, RV: c.seq}, true
	}
	return Event{}, false
}
