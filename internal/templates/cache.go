package templates

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Kind is a resource the cache watches.
type Kind struct {
	// GVK is the kind in the host's preferred version.
	GVK schema.GroupVersionKind
	// GVR is its resource.
	GVR schema.GroupVersionResource
	// Namespaced says whether its objects live in namespaces.
	Namespaced bool
}

// ErrNotSynced is returned while a kind's informer has not listed the host
// yet: a missing object means nothing then.
var ErrNotSynced = errors.New("template cache not synced yet")

// ErrUnknownKind is returned for a kind the host does not serve (or not yet:
// a CRD just installed).
var ErrUnknownKind = errors.New("the host does not serve this kind")

// Cache watches the host's template kinds. It is a manager Runnable.
type Cache struct {
	client   dynamic.Interface
	disco    discovery.DiscoveryInterface
	interval time.Duration
	kick     chan struct{}

	mu       sync.RWMutex
	kinds    map[schema.GroupKind]*watched
	handlers []func(Key)
	// gates are what else must be ready before templates are served;
	// opened records that they all were.
	gates  []<-chan struct{}
	opened atomic.Bool
	ctx    context.Context
	primed chan struct{} // closed after the first discovery started its informers

	access      access
	served      servedKinds // what the host serves (served.go)
	discoveries atomic.Uint64
	// orphans remembers the templates last seen with AnnotationOrphan
	// (orphans.go).
	orphans orphans
}

type watched struct {
	Kind
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	// started is when the informer started (see stalled).
	started time.Time
}

// Indexes of each informer.
const (
	indexPropagationPolicy        = "propagation-policy"
	indexClusterPropagationPolicy = "cluster-propagation-policy"
)

// New returns a cache for the host at cfg that rediscovers the host's kinds
// every interval (and soon after a CRD changes). It watches the kinds cfg's
// identity may list and watch; see OnDemand for kinds watched only when
// needed.
func New(cfg *rest.Config, interval time.Duration) (*Cache, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	authz, err := authorizationclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	return &Cache{client: client, disco: disco, interval: interval, kick: make(chan struct{}, 1),
		kinds: map[schema.GroupKind]*watched{}, primed: make(chan struct{}),
		access: access{authz: authz, onDemand: map[schema.GroupKind]Wanted{}, skipped: map[schema.GroupKind]string{}, idle: map[schema.GroupKind]int{}}}, nil
}

// RequireAlso makes the cache serve templates (Get, GetSynced) only once
// ready is closed as well as its own informers have synced: how the
// controllers wait for what they read templates through. Call before
// Start.
func (c *Cache) RequireAlso(ready <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gates = append(c.gates, ready)
}

// gatesOpen reports whether every RequireAlso channel is closed (once
// they are, without taking the lock again: Get is on every reconcile's
// path).
func (c *Cache) gatesOpen() bool {
	if c.opened.Load() {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, g := range c.gates {
		select {
		case <-g:
		default:
			return false
		}
	}
	c.opened.Store(true)
	return true
}

// waitGates waits for every RequireAlso channel, or ctx's end.
func (c *Cache) waitGates(ctx context.Context) bool {
	c.mu.RLock()
	gates := c.gates
	c.mu.RUnlock()
	for _, g := range gates {
		select {
		case <-g:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Subscribe registers h for changes of any template; call before Start. h
// must not block.
func (c *Cache) Subscribe(h func(Key)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, h)
}

// Start discovers the host's kinds, watches them, and keeps rediscovering
// until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("templates")
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	primed := false
	for {
		err := c.discover(ctx)
		if err != nil {
			logger.Error(err, "Discovering host kinds (some kinds may be missing until the next try)")
		}
		// Prime only once the host answered: an empty set of kinds would
		// make every template look unknown.
		var partial *discovery.ErrGroupDiscoveryFailed
		if !primed && (err == nil || errors.As(err, &partial)) {
			close(c.primed)
			primed = true
		}
		wait := c.interval
		if !primed {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-time.After(wait):
		}
	}
}

// NeedLeaderElection is false: the cache only reads the host, so every
// replica runs it, and a replica taking over the lease (a standby, or a
// restarted process waiting out the killed one's lease) has listed the
// templates by then.
func (c *Cache) NeedLeaderElection() bool { return false }

// Rediscover asks for a discovery soon (a CRD changed).
func (c *Cache) Rediscover() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// WaitForSync waits until the first discovery's informers have listed the
// host.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	select {
	case <-c.primed:
	case <-ctx.Done():
		return false
	}
	c.mu.RLock()
	var synced []cache.InformerSynced
	for _, w := range c.kinds {
		synced = append(synced, w.informer.HasSynced)
	}
	c.mu.RUnlock()
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// Lookup returns the watched kind of a group and kind.
func (c *Cache) Lookup(gk schema.GroupKind) (Kind, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, ok := c.kinds[gk]
	if !ok {
		return Kind{}, false
	}
	return w.Kind, true
}

// Get returns a template, nil if it does not exist, ErrUnknownKind or
// ErrNotSynced. The object is shared: callers must not modify it.
func (c *Cache) Get(k Key) (*unstructured.Unstructured, error) {
	if !c.gatesOpen() {
		return nil, ErrNotSynced
	}
	w, err := c.informer(k.GroupKind())
	if err != nil {
		return nil, err
	}
	key := k.Name
	if k.Namespace != "" {
		key = k.Namespace + "/" + k.Name
	}
	item, exists, err := w.informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	return item.(*unstructured.Unstructured), nil
}

// SyncWait bounds how long GetSynced waits for a kind's informer.
const SyncWait = 5 * time.Second

// GetSynced is Get for reconcilers: while the kind's informer is still
// listing (after a start, or for a kind just discovered) it waits for it,
// up to SyncWait or ctx's end, instead of returning ErrNotSynced at once;
// a stalled kind (see StallAfter) is not waited for.
// Workers then wait for the cache together rather than requeue every
// object each second while it lists (at 20,000 templates that was over
// 100,000 reconciles of nothing after a restart). Never call it from an
// event handler: it blocks.
func (c *Cache) GetSynced(ctx context.Context, k Key) (*unstructured.Unstructured, error) {
	obj, err := c.Get(k)
	if !errors.Is(err, ErrNotSynced) {
		return obj, err
	}
	ctx, cancel := context.WithTimeout(ctx, SyncWait)
	defer cancel()
	select {
	case <-c.primed:
	case <-ctx.Done():
		return nil, err
	}
	if !c.waitGates(ctx) {
		return nil, err
	}
	c.mu.RLock()
	w, ok := c.kinds[k.GroupKind()]
	c.mu.RUnlock()
	if ok && (w.stalled(time.Now()) || !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced)) {
		return nil, err
	}
	return c.Get(k)
}

// List returns the templates of a kind in a namespace ("" for all).
func (c *Cache) List(gk schema.GroupKind, namespace string) ([]*unstructured.Unstructured, error) {
	w, err := c.informer(gk)
	if err != nil {
		return nil, err
	}
	var items []any
	if namespace == "" || !w.Namespaced {
		items = w.informer.GetStore().List()
	} else if items, err = w.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		u := it.(*unstructured.Unstructured)
		if namespace == "" || u.GetNamespace() == namespace {
			out = append(out, u)
		}
	}
	return out, nil
}

// Touch tells the subscribers about every cached template of a kind, as
// if each had changed: how a change in the way the kind is read (its
// WorkloadInterpreter) reaches the controllers. A kind not watched has
// nothing to tell.
func (c *Cache) Touch(gk schema.GroupKind) {
	c.mu.Lock()
	w, ok := c.kinds[gk]
	handlers := c.handlers
	c.mu.Unlock()
	if !ok || w == nil {
		return
	}
	for _, it := range w.informer.GetStore().List() {
		if u, ok := it.(*unstructured.Unstructured); ok {
			key := KeyOf(u)
			for _, h := range handlers {
				h(key)
			}
		}
	}
}

// ProtectedIn returns an object of namespace ns, of any watched kind,
// that carries v1alpha1.AnnotationDeletionProtection "true" and was
// created before the time before (any time when zero), if the cache holds
// one. Such an object outlives a namespace whose finalization was forced
// (the namespace is gone, the object still stored), and the member
// namespaces that hold its copies must stay with it. ErrNotSynced when the
// cache cannot tell yet: its first discovery has not listed, or a kind is
// still listing (or never listed: a stalled kind holds the answer too).
func (c *Cache) ProtectedIn(ns string, before time.Time) (Key, bool, error) {
	if !c.gatesOpen() {
		return Key{}, false, ErrNotSynced
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, w := range c.kinds {
		if !w.Namespaced {
			continue
		}
		if !w.informer.HasSynced() {
			return Key{}, false, fmt.Errorf("%s: %w", w.GVR, ErrNotSynced)
		}
		items, err := w.informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			continue
		}
		for _, it := range items {
			u, ok := it.(*unstructured.Unstructured)
			if ok && v1alpha1.DeletionProtected(u.GetAnnotations()) && (before.IsZero() || u.GetCreationTimestamp().Time.Before(before)) {
				return KeyOf(u), true, nil
			}
		}
	}
	return Key{}, false, nil
}

// LabelledFor returns the keys of the templates, of every kind, that name a
// policy with the explicit policy label: a PropagationPolicy when namespace
// is set, a ClusterPropagationPolicy otherwise.
func (c *Cache) LabelledFor(namespace, policy string) []Key {
	index, value := indexClusterPropagationPolicy, policy
	if namespace != "" {
		index, value = indexPropagationPolicy, namespace+"/"+policy
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Key
	for _, w := range c.kinds {
		items, err := w.informer.GetIndexer().ByIndex(index, value)
		if err != nil { // every informer has both indexes
			klog.Background().Error(err, "Reading a template index", "index", index, "resource", w.GVR.String())
			continue
		}
		for _, it := range items {
			out = append(out, KeyOf(it.(*unstructured.Unstructured)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Relevant reports whether an update of a template matters to propagation:
// a new generation (for kinds that count them), any change of a kind that
// does not (ConfigMaps, Secrets), or a change of labels, annotations,
// finalizers or deletion. A status-only update of a Deployment is not.
func Relevant(old, obj *unstructured.Unstructured) bool {
	if old.GetResourceVersion() == obj.GetResourceVersion() {
		return false
	}
	if obj.GetGeneration() == 0 || old.GetGeneration() != obj.GetGeneration() {
		return true
	}
	return !equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) ||
		!equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(old.GetFinalizers(), obj.GetFinalizers()) ||
		(old.GetDeletionTimestamp() == nil) != (obj.GetDeletionTimestamp() == nil)
}
