package templates

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestStalledKindIsNotWaitedFor: an object of a kind whose informer has
// listed for longer than StallAfter is not waited for (GetSynced returns
// ErrNotSynced at once) and is retried every 30 s instead of every second;
// a kind that has just started listing is waited for and retried soon.
func TestStalledKindIsNotWaitedFor(t *testing.T) {
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	// An informer that never runs never syncs: a list that keeps failing.
	never := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return nil, errors.New("conversion webhook unavailable")
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("conversion webhook unavailable")
		},
	}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	primed := make(chan struct{})
	close(primed)
	key := Key{Group: "example.com", Kind: "Widget", Namespace: "shop", Name: "w"}
	tests := []struct {
		name      string
		started   time.Duration // ago
		wantRetry time.Duration
		waits     bool
	}{
		{name: "listing", started: time.Second, wantRetry: listingRetry, waits: true},
		{name: "stalled", started: 2 * StallAfter, wantRetry: stalledRetry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cache{primed: primed, kinds: map[schema.GroupKind]*watched{
				widgets: {Kind: Kind{GVK: widgets.WithVersion("v1")}, informer: never, started: time.Now().Add(-tc.started)},
			}}
			if got := c.SyncRetry(key); got != tc.wantRetry {
				t.Errorf("SyncRetry = %s, want %s", got, tc.wantRetry)
			}
			// A listing kind is waited for until ctx ends (SyncWait is
			// longer); a stalled one returns long before.
			window := 200 * time.Millisecond
			if !tc.waits {
				window = time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			_, err := c.GetSynced(ctx, key)
			if waited := ctx.Err() != nil; !errors.Is(err, ErrNotSynced) || waited != tc.waits {
				t.Errorf("GetSynced = %v, waited until ctx's end: %v; want ErrNotSynced, %v", err, waited, tc.waits)
			}
		})
	}
	if got := (&Cache{}).SyncRetry(key); got != listingRetry {
		t.Errorf("SyncRetry of an unknown kind = %s, want %s", got, listingRetry)
	}
}
