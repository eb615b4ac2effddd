// Package trigger bridges events from Flotilla's own caches (host
// templates, member objects) into controller-runtime work queues.
package trigger

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue collects requests from any goroutine and hands them to a
// controller's work queue once the controller starts; requests that arrive
// earlier are kept (deduplicated) until then.
type Queue[T comparable] struct {
	mu      sync.Mutex
	q       workqueue.TypedRateLimitingInterface[T]
	pending map[T]struct{}
}

// Add enqueues a request. It never blocks.
func (b *Queue[T]) Add(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addLocked(item)
}

// addLocked is Add with b.mu held.
func (b *Queue[T]) addLocked(item T) {
	if b.q != nil {
		b.q.Add(item)
		return
	}
	if b.pending == nil {
		b.pending = map[T]struct{}{}
	}
	b.pending[item] = struct{}{}
}

// Urgent is the priority of AddUrgent's requests: above the default (0)
// of watch events and requeues.
const Urgent = 1

// AddUrgent enqueues a request ahead of those added by Add and of the
// controller's own watch events, when the controller's queue orders by
// priority (controller-runtime's priority queue, its default); otherwise
// it is Add. Requests that arrive before the controller starts are kept
// as Add keeps them.
func (b *Queue[T]) AddUrgent(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pq, ok := b.q.(priorityqueue.PriorityQueue[T]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(Urgent)}, item)
		return
	}
	b.addLocked(item)
}

// Source is the controller source that connects the queue.
func (b *Queue[T]) Source() source.TypedSource[T] {
	return source.TypedFunc[T](func(_ context.Context, q workqueue.TypedRateLimitingInterface[T]) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.q = q
		for item := range b.pending {
			q.Add(item)
		}
		b.pending = nil
		return nil
	})
}
