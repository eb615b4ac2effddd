package membercache

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SourceState is how one member's objects of one kind stand in the cache.
type SourceState struct {
	// Synced is true once the member's objects were listed.
	Synced bool
	// Err is the class of the latest list or watch failure ("" once a
	// list or a watch succeeds again), in words safe to show any reader:
	// the error itself is in the gateway's log.
	Err string
	// Since is when Synced or Err last changed.
	Since time.Time
}

// Sources returns the state of every member that feeds gr.
func (c *Cache) Sources(gr schema.GroupResource) map[string]SourceState {
	s, err := c.store(gr)
	if err != nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]SourceState, len(s.sources))
	for k, v := range s.sources {
		out[k] = v
	}
	return out
}

// setSource records a cluster's state; it reports whether it changed.
func (s *store) setSource(cluster string, synced bool, errMsg string, alive live) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !alive.ok() {
		return false
	}
	old, ok := s.sources[cluster]
	if ok && old.Synced == (synced || old.Synced) && old.Err == errMsg {
		return false
	}
	s.sources[cluster] = SourceState{Synced: synced || old.Synced, Err: errMsg, Since: time.Now()}
	return true
}

func (s *store) forgetSource(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sources, cluster)
}

// Run feeds every kind of the cache from one cluster's apiserver until ctx
// ends: a reflector per kind lists and watches, and the cache keeps the
// pruned objects. cluster is "" for the host itself (its events).
func (c *Cache) Run(ctx context.Context, cluster string, client kubernetes.Interface) {
	for _, s := range c.stores {
		go s.run(ctx, cluster, client)
	}
}

// RunKind is Run for one kind.
func (c *Cache) RunKind(ctx context.Context, gr schema.GroupResource, cluster string, client kubernetes.Interface) error {
	s, err := c.store(gr)
	if err != nil {
		return err
	}
	go s.run(ctx, cluster, client)
	return nil
}

func (s *store) run(ctx context.Context, cluster string, client kubernetes.Interface) {
	logger := klog.FromContext(ctx).WithValues("cluster", cluster, "resource", s.kind.GroupResource())
	alive := live(func() bool { return ctx.Err() == nil })
	// A new feed (a new endpoint or credentials) starts unlisted.
	s.mu.Lock()
	if alive.ok() {
		s.sources[cluster] = SourceState{Since: time.Now()}
	}
	s.mu.Unlock()
	lw := cache.NewListWatchFromClient(s.kind.client(client), s.kind.Resource.Resource, "", fields.Everything())
	failed := func(err error) {
		if err != nil && ctx.Err() == nil {
			class := failureClass(err)
			if s.setSource(cluster, false, class, alive) {
				logger.Info("Member list or watch failed", "reason", class, "err", err)
			} else {
				logger.V(2).Info("Member list or watch failed", "err", err)
			}
		}
	}
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	lw.ListFunc, lw.WatchFunc = nil, nil
	lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		out, err := list(ctx, o)
		failed(err)
		return out, err
	}
	lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		out, err := watchFn(ctx, o)
		if err == nil {
			s.setSource(cluster, false, "", alive)
		}
		failed(err)
		return out, err
	}
	r := cache.NewReflectorWithOptions(lw, s.kind.newObject(), &sourceStore{s: s, cluster: cluster, alive: alive},
		cache.ReflectorOptions{Name: fmt.Sprintf("gateway %s %s", cluster, s.kind.GroupResource())})
	r.RunWithContext(ctx)
}

// sourceStore is the reflector's store: it hands everything to the cache.
type sourceStore struct {
	s       *store
	cluster string
	// alive is false once the feed is stopped: what its reflector still
	// hands over is dropped, so that a member that left stays gone.
	alive live
}

func (a *sourceStore) Add(obj any) error { return a.Update(obj) }
func (a *sourceStore) Update(obj any) error {
	o, ok := obj.(runtime.Object)
	if !ok {
		return fmt.Errorf("not an object: %T", obj)
	}
	return a.s.set(a.cluster, o, a.alive)
}

func (a *sourceStore) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return fmt.Errorf("not an object: %T", obj)
	}
	return a.s.delete(a.cluster, o, a.alive)
}

func (a *sourceStore) Replace(list []any, _ string) error {
	objs := make([]runtime.Object, 0, len(list))
	for _, item := range list {
		if o, ok := item.(runtime.Object); ok {
			objs = append(objs, o)
		}
	}
	err := a.s.replace(a.cluster, objs, a.alive)
	a.s.setSource(a.cluster, true, "", a.alive)
	return err
}

func (a *sourceStore) Resync() error { return nil }
