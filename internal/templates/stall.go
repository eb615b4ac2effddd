package templates

import (
	"time"
)

// StallAfter is how long a kind's informer may list without syncing
// before the kind counts as stalled: its list keeps failing (a CRD whose
// conversion webhook is down, say) while discovery still lists the kind.
// GetSynced then no longer waits for it, and SyncRetry spaces the retries
// of its objects, so that they do not hold the workers every other object
// shares.
const StallAfter = time.Minute

// Retries of an object whose kind is not synced: soon while its informer
// lists, seldom once it is stalled (when it syncs, its informer hands
// every object to the handlers anyway).
const (
	listingRetry = time.Second
	stalledRetry = 30 * time.Second
)

// stalled reports whether w's informer has listed for longer than
// StallAfter without syncing.
func (w *watched) stalled(now time.Time) bool {
	return !w.informer.HasSynced() && now.Sub(w.started) > StallAfter
}

// SyncRetry says when to look again at the object k that GetSynced found
// not synced (ErrNotSynced).
func (c *Cache) SyncRetry(k Key) time.Duration {
	c.mu.RLock()
	w, ok := c.kinds[k.GroupKind()]
	c.mu.RUnlock()
	if ok && w.informer != nil && w.stalled(time.Now()) {
		return stalledRetry
	}
	return listingRetry
}
