package membercache

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Options tune a Cache.
type Options struct {
	// History is how many recent changes per kind a watch can resume
	// from (default 10,000); a watch from an older resourceVersion gets
	// 410 Gone and relists.
	History int
	// WatchBuffer is how many events a slow watcher may fall behind
	// before the cache ends its watch (default 1,000); the client resumes
	// from its last resourceVersion.
	WatchBuffer int
}

// Cache is the multi-cluster cache of every member kind the gateway
// serves. Its resourceVersions are its own: one sequence for all kinds,
// prefixed by an epoch (the process's start), so that a resourceVersion
// from an earlier gateway process is recognised as unknown.
type Cache struct {
	epoch  uint64
	seq    atomic.Uint64
	opts   Options
	stores map[schema.GroupResource]*store
}

// New returns an empty cache of ks.
func New(ks []*Kind, opts Options) *Cache {
	if opts.History <= 0 {
		opts.History = 10_000
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 1_000
	}
	c := &Cache{
		// A random epoch (maxEpoch): two gateway processes, even started
		// together, do not take each other's resourceVersions.
		epoch:  1 + rand.Uint64N(maxEpoch-1),
		opts:   opts,
		stores: map[schema.GroupResource]*store{},
	}
	for _, k := range ks {
		c.stores[k.GroupResource()] = newStore(c, k)
	}
	return c
}

// Kinds returns the kinds the cache holds.
func (c *Cache) Kinds() []*Kind {
	out := make([]*Kind, 0, len(c.stores))
	for _, s := range c.stores {
		out = append(out, s.kind)
	}
	return out
}

// Kind returns the cached kind of gr.
func (c *Cache) Kind(gr schema.GroupResource) (*Kind, bool) {
	s, ok := c.stores[gr]
	if !ok {
		return nil, false
	}
	return s.kind, true
}

func (c *Cache) store(gr schema.GroupResource) (*store, error) {
	s, ok := c.stores[gr]
	if !ok {
		return nil, fmt.Errorf("%s is not a cached member kind", gr)
	}
	return s, nil
}

// Set stores obj, an object of cluster, taking it over.
func (c *Cache) Set(gr schema.GroupResource, cluster string, obj runtime.Object) error {
	s, err := c.store(gr)
	if err != nil {
		return err
	}
	return s.set(cluster, obj, nil)
}

// Delete removes obj of cluster.
func (c *Cache) Delete(gr schema.GroupResource, cluster string, obj runtime.Object) error {
	s, err := c.store(gr)
	if err != nil {
		return err
	}
	return s.delete(cluster, obj, nil)
}

// Replace makes objs the whole content of cluster for gr (a relist): what
// changed, appeared or went is recorded as such; what did not change is
// left alone.
func (c *Cache) Replace(gr schema.GroupResource, cluster string, objs []runtime.Object) error {
	s, err := c.store(gr)
	if err != nil {
		return err
	}
	return s.replace(cluster, objs, nil)
}

// RemoveCluster forgets everything of cluster (it left the federation),
// recording the deletions for watchers.
func (c *Cache) RemoveCluster(cluster string) {
	for _, s := range c.stores {
		_ = s.replace(cluster, nil, nil)
		s.forgetSource(cluster)
	}
}

// Filter selects the entries a list or watch returns.
type Filter struct {
	// Namespace, when set, limits to one namespace.
	Namespace string
	// Cluster, when set, limits to one member's objects (NAME@member).
	Cluster string
	// Label and Field are selectors (nil: everything).
	Label labels.Selector
	Field fields.Selector
}

// Matches reports whether e passes the filter.
func (f Filter) Matches(e *Entry) bool {
	if e == nil {
		return false
	}
	if f.Namespace != "" && e.Namespace != f.Namespace {
		return false
	}
	if f.Cluster != "" && e.Cluster != f.Cluster {
		return false
	}
	if f.Label != nil && !f.Label.Empty() && !f.Label.Matches(e.labels) {
		return false
	}
	if f.Field != nil && !f.Field.Empty() && !f.Field.Matches(e.Fields()) {
		return false
	}
	return true
}

// ValidateFieldSelector refuses a field selector that names a field the
// kind does not support, with the message a kube-apiserver gives.
func (k *Kind) ValidateFieldSelector(sel fields.Selector) error {
	if sel == nil {
		return nil
	}
	supported := map[string]bool{}
	for _, f := range k.FieldLabels() {
		supported[f] = true
	}
	for _, r := range sel.Requirements() {
		if !supported[r.Field] {
			return fmt.Errorf("field label not supported: %s", r.Field)
		}
	}
	return nil
}

// Event is one change a watcher receives.
type Event struct {
	// Type is Added, Modified, Deleted or Bookmark.
	Type watch.EventType
	// Entry is the object (nil for a bookmark). A deletion's is the last
	// state, which carries its own earlier resourceVersion:
	// Cache.EventEntry gives it at the event's.
	Entry *Entry
	// RV is the event's resourceVersion.
	RV uint64
	// InitialEventsEnd marks the bookmark that ends a watch's initial
	// events (sendInitialEvents).
	InitialEventsEnd bool
	// leaving makes Entry at RV once for all the watchers of a change.
	leaving *atRV
}
