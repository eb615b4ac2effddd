package templates

import (
	"cmp"
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Templates carry no Flotilla finalizer: a deleted template is gone before
// the federate controller reads it. The federate controller records a
// template's AnnotationOrphan on its FederatedObject while the template
// lives; for an annotation set just before the delete, the cache
// remembers, for a while, which objects it last saw with the annotation.
// Every version of an object passes through the informer's transform
// before the cache's store changes, the final state of a delete included,
// so a reader who finds a template gone and asks gets the answer of its
// final state.
const (
	// OrphanMemory is how long the cache remembers an object it saw with
	// AnnotationOrphan "true" (from its last such version).
	OrphanMemory = 5 * time.Minute
	// OrphanCapacity bounds how many such objects the cache remembers; the
	// oldest go first.
	OrphanCapacity = 4096
)

// orphans remembers the objects whose last version the cache saw carried
// AnnotationOrphan "true", by key and uid: an object deleted and created
// again with the annotation (kubectl delete, then apply) does not make
// the cache forget that the earlier object's copies stay. It is safe for
// concurrent use; the zero value remembers OrphanCapacity objects for
// OrphanMemory.
type orphans struct {
	ttl time.Duration // OrphanMemory if zero
	max int           // OrphanCapacity if zero

	count   atomic.Int64 // len(entries), read without the lock
	mu      sync.Mutex
	entries map[orphanID]*list.Element // of *orphan
	order   *list.List                 // oldest first
}

// orphanID names one object.
type orphanID struct {
	key Key
	uid types.UID
}

// orphan is one remembered object.
type orphan struct {
	orphanID
	at time.Time
}

// observe notes one version of an object, as the informer receives it.
func (o *orphans) observe(u *unstructured.Unstructured, now time.Time) {
	if hasOrphanAnnotation(u) {
		o.record(KeyOf(u), u.GetUID(), now)
		return
	}
	if o.count.Load() == 0 {
		return // the common case: nothing to forget
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.entries[orphanID{KeyOf(u), u.GetUID()}]; ok {
		o.remove(e) // the annotation was removed
	}
}

// hasOrphanAnnotation reports whether u's annotations keep its copies
// (AnnotationOrphan or AnnotationSuspend "true", see
// v1alpha1.KeepsCopies), without copying them.
func hasOrphanAnnotation(u *unstructured.Unstructured) bool {
	a, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "annotations")
	m, _ := a.(map[string]any)
	orphan, _ := m[v1alpha1.AnnotationOrphan].(string)
	suspend, _ := m[v1alpha1.AnnotationSuspend].(string)
	return orphan == "true" || suspend == "true"
}

// record remembers that the object k with uid carried the annotation.
func (o *orphans) record(k Key, uid types.UID, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.entries == nil {
		o.entries, o.order = map[orphanID]*list.Element{}, list.New()
	}
	id := orphanID{k, uid}
	if e, ok := o.entries[id]; ok {
		o.remove(e)
	}
	o.entries[id] = o.order.PushBack(&orphan{orphanID: id, at: now})
	o.count.Store(int64(len(o.entries)))
	o.prune(now)
}

// orphaned reports whether the last version of the object k with uid
// seen no longer than the memory ago carried the annotation.
func (o *orphans) orphaned(k Key, uid types.UID, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prune(now)
	_, ok := o.entries[orphanID{k, uid}]
	return ok
}

// forget drops the objects of key k.
func (o *orphans) forget(k Key) {
	if o.count.Load() == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for e := o.order.Front(); e != nil; {
		next := e.Next()
		if e.Value.(*orphan).key == k {
			o.remove(e)
		}
		e = next
	}
}

// len returns how many objects are remembered.
func (o *orphans) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.entries)
}

// remove drops one entry; o.mu is held.
func (o *orphans) remove(e *list.Element) {
	o.order.Remove(e)
	delete(o.entries, e.Value.(*orphan).orphanID)
	o.count.Store(int64(len(o.entries)))
}

// prune drops the expired entries and the oldest beyond the capacity;
// o.mu is held.
func (o *orphans) prune(now time.Time) {
	if o.order == nil {
		return
	}
	ttl, max := cmp.Or(o.ttl, OrphanMemory), cmp.Or(o.max, OrphanCapacity)
	for e := o.order.Front(); e != nil; e = o.order.Front() {
		if len(o.entries) <= max && now.Sub(e.Value.(*orphan).at) < ttl {
			return
		}
		o.remove(e)
	}
}

// LastSeenOrphan reports whether the last version of the template k with
// uid that the cache saw, no longer than OrphanMemory ago, carried
// AnnotationOrphan "true". Asked about a template the cache no longer
// holds, it answers for the deleted object's final state. False when it
// does not know: after a restart of the process, or for an object last
// seen longer ago.
func (c *Cache) LastSeenOrphan(k Key, uid types.UID) bool {
	return c.orphans.orphaned(k, uid, time.Now())
}

// GoneKeepsCopies reports whether the member copies of the object of key
// k (uid), found gone, stay: its final state asked to keep them
// (LastSeenOrphan), or it was protected from deletion (protected: as its
// FederatedObject recorded, v1alpha1.AnnotationTemplateProtected) and went
// with its kind's CRD, whose cleanup deletes past the admission policy
// that protects it (RemovedWithCRDNow: the host is asked when the cache
// has not seen the CRD's deletion yet). An error says that cannot be told
// yet; ask again.
func (c *Cache) GoneKeepsCopies(ctx context.Context, k Key, uid types.UID, protected bool) (bool, error) {
	if c.LastSeenOrphan(k, uid) {
		return true, nil
	}
	if !protected {
		return false, nil
	}
	return c.RemovedWithCRDNow(ctx, k.GroupKind())
}

// DeletingKeepsCopies reports whether the member copies of tmpl, whose
// deletion has started (finalizers hold it), stay: it asks to keep them
// (v1alpha1.KeepsCopies), or it is protected from deletion. The admission
// policy refuses the deletion of a protected object, so one being deleted
// went past it (its kind's CRD's cleanup) or was protected after its
// deletion began: either way the protection says to keep the copies.
func (c *Cache) DeletingKeepsCopies(tmpl *unstructured.Unstructured) bool {
	a := tmpl.GetAnnotations()
	return v1alpha1.KeepsCopies(a) || v1alpha1.DeletionProtected(a)
}

// ForgetOrphan drops what the cache remembers about the object of key k;
// call it once nothing is left to decide (the template and its
// FederatedObject are gone).
func (c *Cache) ForgetOrphan(k Key) {
	c.orphans.forget(k)
}
