package templates

// This file discovers the host's kinds and runs one informer for each.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// informer returns the informer of a kind once the first discovery is
// done: ErrNotSynced before, ErrUnknownKind for a kind the host does not
// serve.
func (c *Cache) informer(gk schema.GroupKind) (*watched, error) {
	select {
	case <-c.primed:
	default:
		return nil, fmt.Errorf("%s: %w", gk, ErrNotSynced)
	}
	c.mu.RLock()
	w, ok := c.kinds[gk]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%s: %w", gk, ErrUnknownKind)
	}
	if !w.informer.HasSynced() {
		return nil, fmt.Errorf("%s: %w", gk, ErrNotSynced)
	}
	return w, nil
}

// Discoveries returns how many discoveries the cache has run.
func (c *Cache) Discoveries() uint64 { return c.discoveries.Load() }

// discover brings the set of informers in line with the host's kinds.
func (c *Cache) discover(ctx context.Context) error {
	defer c.discoveries.Add(1)
	lists, err := c.disco.ServerPreferredResources()
	if len(lists) == 0 && err != nil {
		return err
	}
	found := map[schema.GroupKind]Kind{}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			klog.FromContext(ctx).Error(perr, "Skipping a group version the host's discovery lists", "groupVersion", list.GroupVersion)
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch") || Excluded(gv.Group, r.Name) {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			found[gk] = Kind{GVK: gv.WithKind(r.Kind), GVR: gv.WithResource(r.Name), Namespaced: r.Namespaced}
		}
	}
	var failed *discovery.ErrGroupDiscoveryFailed
	partial := errors.As(err, &failed)
	groupFailed := func(gv schema.GroupVersion) bool { return partial && failed.Groups[gv] != nil }
	var failedGroups []schema.GroupVersion
	if partial {
		failedGroups = slices.Collect(maps.Keys(failed.Groups))
	}
	served := c.served.note(found, failedGroups)
	c.filter(ctx, found)
	c.mu.Lock()
	var dropped []*watched
	for gk, w := range c.kinds {
		k, ok := found[gk]
		if ok && k == w.Kind {
			continue
		}
		if !ok && groupFailed(w.GVK.GroupVersion()) {
			continue // its group failed to answer: keep watching
		}
		w.cancel()
		delete(c.kinds, gk)
		dropped = append(dropped, w)
	}
	for gk, k := range found {
		if _, ok := c.kinds[gk]; !ok {
			c.kinds[gk] = c.watch(ctx, k)
		}
	}
	handlers := c.handlers
	c.mu.Unlock()
	for _, w := range dropped {
		if _, ok := served[w.GVK.GroupKind()]; ok {
			continue // still served, no longer watched (an on-demand kind not needed)
		}
		// The host no longer serves the kind, and a stopped informer
		// tells nothing more: its objects' keys go to the subscribers
		// once, who find the kind unwatched and ask what became of them
		// (a deleted CRD's objects may not all have had their delete
		// event yet).
		for _, key := range w.informer.GetStore().ListKeys() {
			k := keyOfStoreKey(w.GVK.GroupKind(), key)
			for _, h := range handlers {
				h(k)
			}
		}
	}
	return err
}

// watch starts an informer for a kind; c.mu is held.
func (c *Cache) watch(ctx context.Context, k Kind) *watched {
	ctx, cancel := context.WithCancel(ctx)
	inf := dynamicinformer.NewFilteredDynamicInformer(c.client, k.GVR, "", 0, cache.Indexers{
		cache.NamespaceIndex:          cache.MetaNamespaceIndexFunc,
		indexPropagationPolicy:        labelIndex(v1alpha1.LabelPropagationPolicy, true),
		indexClusterPropagationPolicy: labelIndex(v1alpha1.LabelClusterPropagationPolicy, false),
	}, nil).Informer()
	logger := klog.FromContext(ctx).WithName("templates").WithValues("resource", k.GVR.String())
	// A new informer takes a transform and handlers: the errors below
	// (informer already started or stopped) cannot happen here.
	if err := inf.SetTransform(c.transform); err != nil {
		logger.Error(err, "Setting the template informer's transform")
	}
	handlers := c.handlers
	notify := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			key := KeyOf(u)
			for _, h := range handlers {
				h(key)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, obj any) {
			if Relevant(old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)) {
				notify(obj)
			}
		},
		DeleteFunc: notify,
	}); err != nil {
		logger.Error(err, "Adding the template informer's handler")
	}
	if k.GVR.Group == "apiextensions.k8s.io" {
		// A new or removed CRD changes the kinds; its establishment is a
		// status update, so every event counts.
		kick := func(any) { c.Rediscover() }
		// crdGone notes a CRD being deleted, or one that defines its kind
		// (again), and rediscovers.
		crdGone := func(obj any, deleted bool) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == crdKind.Kind {
				c.served.noteCRD(u, deleted)
			}
			kick(obj)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { crdGone(o, false) },
			UpdateFunc: func(_, o any) { crdGone(o, false) },
			DeleteFunc: func(o any) { crdGone(o, true) },
		}); err != nil {
			logger.Error(err, "Adding the CRD informer's rediscovery handler")
		}
	}
	go inf.RunWithContext(ctx)
	return &watched{Kind: k, informer: inf, cancel: cancel, started: time.Now()}
}

// labelIndex indexes objects by the value of a label, prefixed with their
// namespace for a namespaced kind; objects without it are not indexed.
func labelIndex(label string, namespaced bool) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, nil
		}
		v, ok := u.GetLabels()[label]
		if !ok || v == "" {
			return nil, nil
		}
		if namespaced {
			if u.GetNamespace() == "" {
				return nil, nil
			}
			return []string{u.GetNamespace() + "/" + v}, nil
		}
		return []string{v}, nil
	}
}

// LastApplied is kubectl's client-side apply record. It describes the host
// object, not the member copies, and doubles the size of every object, so
// the cache drops it.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// transform notes each version of a template (orphans) before the store
// changes, then trims it.
func (c *Cache) transform(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.orphans.observe(u, time.Now())
	}
	return trim(obj)
}

// trim drops what the controllers never read: managed fields and kubectl's
// last-applied record.
func trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	if a := u.GetAnnotations(); a != nil {
		if _, ok := a[LastApplied]; ok {
			delete(a, LastApplied)
			if len(a) == 0 {
				a = nil
			}
			u.SetAnnotations(a)
		}
	}
	return u, nil
}

// hasVerbs reports whether verbs has every one of want.
func hasVerbs(verbs []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			if v == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// KindOf returns the watched kind of a group and resource (as a member
// reports it in an object event).
func (c *Cache) KindOf(gr schema.GroupResource) (Kind, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, w := range c.kinds {
		if w.GVR.GroupResource() == gr {
			return w.Kind, true
		}
	}
	return Kind{}, false
}
