// Package recent remembers the objects a controller has just written until
// its informer delivers them. A reconcile that runs before the cache has
// caught up with the controller's own write (a member event queued during
// the write brings the object straight back) then works on what was
// written instead of the stale cached copy, which would make it send the
// same write again (propagate's status apply: harmless, but a host write
// per such pass, which in a burst of new objects is most of them).
package recent

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writes holds, per object, the last write whose result the cache has not
// shown yet. The zero value is ready to use.
type Writes[T client.Object] struct {
	m sync.Map // types.NamespacedName → entry[T]
}

type entry[T client.Object] struct {
	replaced string // resourceVersion the write replaced
	written  T      // the object as the apiserver returned it
}

// Wrote records that an object based on resourceVersion replaced was
// written and that the apiserver returned written. Should the informer
// deliver the write before Wrote runs, the entry stays until the next
// Fresh of that object, which drops it.
func (w *Writes[T]) Wrote(replaced string, written T) {
	w.m.Store(client.ObjectKeyFromObject(written), entry[T]{replaced: replaced, written: written.DeepCopyObject().(T)})
}

// Fresh returns what the controller last wrote of cached's object when
// cached is the version that write replaced (the cache has not caught up
// yet), and cached otherwise.
func (w *Writes[T]) Fresh(cached T) T {
	key := client.ObjectKeyFromObject(cached)
	v, ok := w.m.Load(key)
	if !ok {
		return cached
	}
	e := v.(entry[T])
	if cached.GetResourceVersion() == e.replaced {
		return e.written.DeepCopyObject().(T)
	}
	// The cache shows the write or something newer.
	w.m.CompareAndDelete(key, v)
	return cached
}

// Observed forgets the write of obj once the cache holds it (call it from
// the informer's event handlers) or when obj is gone.
func (w *Writes[T]) Observed(obj client.Object, deleted bool) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	v, ok := w.m.Load(key)
	if !ok {
		return
	}
	if deleted || v.(entry[T]).written.GetResourceVersion() == obj.GetResourceVersion() {
		w.m.CompareAndDelete(key, v)
	}
}

// Len is the number of writes not yet observed.
func (w *Writes[T]) Len() int {
	n := 0
	w.m.Range(func(any, any) bool { n++; return true })
	return n
}
