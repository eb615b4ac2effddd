package member

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
)

// ObjectEvent says that a managed object in a member was added, changed or
// deleted.
type ObjectEvent struct {
	// Cluster is the member's name.
	Cluster string
	// Resource is the object's resource.
	Resource schema.GroupVersionResource
	// Namespace and Name identify the object.
	Namespace, Name string
	// StatusOnly says that an update changed nothing but the object's
	// status: the generation (of a kind that counts them), labels and
	// annotations are as they were.
	StatusOnly bool
}

// ObjectHandler receives ObjectEvents. It must not block.
type ObjectHandler func(ObjectEvent)

// objectCaches are a session's informers on the objects Flotilla manages in
// the member (label flotilla.io/managed=true), one per resource, started on
// first use and stopped with the session.
type objectCaches struct {
	client dynamic.Interface
	// verified remembers projections found current by a full comparison
	// (see dispatch.Verified).
	verified *dispatch.Verified
	mu       sync.Mutex
	m        map[schema.GroupVersionResource]cache.SharedIndexInformer
	started  map[schema.GroupVersionResource]time.Time
	stopped  bool // the session is stopping: start no informer
}

// stop keeps informers from starting once the session stops.
func (c *objectCaches) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

func newObjectCaches(rt http.RoundTripper, cfg *rest.Config) (*objectCaches, error) {
	client, err := dynamic.NewForConfigAndClient(cfg, &http.Client{Transport: rt})
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &objectCaches{client: client, verified: dispatch.NewVerified(), m: map[schema.GroupVersionResource]cache.SharedIndexInformer{}, started: map[schema.GroupVersionResource]time.Time{}}, nil
}

// Dynamic returns a dynamic client for the member.
func (s *Session) Dynamic() dynamic.Interface { return s.objects.client }

// Verified is the session's memory of copies whose projection a full
// comparison found current (pass it as dispatch.Options.Verified).
func (s *Session) Verified() *dispatch.Verified { return s.objects.verified }

// Mapper maps kinds to the member's resources from its discovery (cached;
// reset it when a kind is not found).
func (s *Session) Mapper() meta.RESTMapper { return s.mapper }

// CacheState says how far a session's cache of a resource is.
type CacheState int

const (
	// CacheSynced: the cache has listed the member; a missing object is
	// absent (or not managed).
	CacheSynced CacheState = iota
	// CacheSyncing: the cache is listing; a missing object means nothing
	// yet.
	CacheSyncing
	// CacheStalled: the cache has not synced for StallAfter (the member is
	// slow, or forbids the list); read the member directly.
	CacheStalled
)

// StallAfter is how long a cache may take to sync before callers stop
// waiting for it.
const StallAfter = 10 * time.Second

// ManagedObject returns the member's managed copy of an object from the
// session's cache (its projection: see dispatch.Project), starting the cache of the resource on first use, and
// the cache's state: until it is CacheSynced a missing object means
// nothing.
func (s *Session) ManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, CacheState) {
	inf, started := s.objectInformer(gvr)
	if !inf.HasSynced() {
		if time.Since(started) > StallAfter {
			return nil, CacheStalled
		}
		return nil, CacheSyncing
	}
	return lookup(inf, namespace, name), CacheSynced
}

// SyncWait bounds how long WaitManaged waits for a cache that is listing.
const SyncWait = 5 * time.Second

// WaitManaged waits while the session's cache of gvr is listing (starting
// it on first use): until it has synced, SyncWait has passed, the cache
// counts as stalled (StallAfter from its start) or ctx ends. Reconcilers
// call it before they look copies up, so that after a start their workers
// wait for the member caches together instead of requeueing every object
// each second while 20,000 copies are listed. It blocks: never call it
// from an event handler.
func (s *Session) WaitManaged(ctx context.Context, gvr schema.GroupVersionResource) {
	inf, started := s.objectInformer(gvr)
	if inf.HasSynced() {
		return
	}
	wait := min(SyncWait, time.Until(started.Add(StallAfter)))
	if wait <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
}

// PeekManagedObject returns the member's managed copy of an object if the
// session already caches its resource and has synced; it starts nothing.
func (s *Session) PeekManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	s.objects.mu.Lock()
	inf, ok := s.objects.m[gvr]
	s.objects.mu.Unlock()
	if !ok || !inf.HasSynced() {
		return nil, false
	}
	obj := lookup(inf, namespace, name)
	return obj, obj != nil
}

// lookup returns an object from an informer's store, nil if absent.
func lookup(inf cache.SharedIndexInformer, namespace, name string) *unstructured.Unstructured {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	return item.(*unstructured.Unstructured)
}

// objectInformer returns the informer of gvr, starting it if needed, and
// when it started.
func (s *Session) objectInformer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, time.Time) {
	c := s.objects
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.m[gvr]; ok {
		return inf, c.started[gvr]
	}
	res := c.client.Resource(gvr)
	selector := v1alpha1.LabelManaged + "=true"
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return res.Watch(ctx, o)
		},
	}, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{})
	_ = inf.SetTransform(dispatch.Project)
	notify := func(obj any, statusOnly bool) {
		if s.onObject == nil {
			return
		}
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		s.onObject(ObjectEvent{Cluster: s.Name, Resource: gvr, Namespace: u.GetNamespace(), Name: u.GetName(), StatusOnly: statusOnly})
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { notify(obj, false) },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			notify(obj, statusOnly(o, n))
		},
		DeleteFunc: func(obj any) { notify(obj, false) },
	})
	c.m[gvr] = inf
	c.started[gvr] = time.Now()
	if !c.stopped {
		s.wg.Go(func() { inf.RunWithContext(s.ctx) })
	}
	return inf, c.started[gvr]
}

// throttledMapper is a member's RESTMapper whose Reset (a full
// rediscovery, asked for when a kind is not found) runs at most once per
// resetInterval, so that a kind a member lacks does not make every
// reconcile rediscover the member. It remembers the mappings it found
// until the next Reset: the discovery mapper searches every group and
// version of the member on each call (7% of Flotilla's CPU in a restart
// over 20,000 objects, two calls per copy and pass).
type throttledMapper struct {
	meta.ResettableRESTMapper
	mu       sync.Mutex
	last     time.Time
	mappings sync.Map // mappingKey → *meta.RESTMapping
}

// mappingKey is one RESTMapping question.
type mappingKey struct {
	gk      schema.GroupKind
	version string
}

// RESTMapping answers from memory for a question asked with exactly one
// version (as Flotilla asks) and asks the member's discovery otherwise.
// Callers must not modify the mapping.
func (m *throttledMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.ResettableRESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk: gk, version: versions[0]}
	if v, ok := m.mappings.Load(key); ok {
		return v.(*meta.RESTMapping), nil
	}
	mapping, err := m.ResettableRESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mappings.Store(key, mapping)
	}
	return mapping, err
}

// resetInterval bounds how often a member is rediscovered for unknown kinds.
const resetInterval = 10 * time.Second

// Reset rediscovers, unless it did less than resetInterval ago.
func (m *throttledMapper) Reset() {
	m.mu.Lock()
	if time.Since(m.last) < resetInterval {
		m.mu.Unlock()
		return
	}
	m.last = time.Now()
	m.mu.Unlock()
	m.ResettableRESTMapper.Reset()
	m.mappings.Clear()
}

// statusOnly reports whether an update changed only status.
func statusOnly(old, obj *unstructured.Unstructured) bool {
	return obj.GetGeneration() != 0 && old.GetGeneration() == obj.GetGeneration() &&
		equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) &&
		equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations())
}
