package member

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/poll"
)

// Kicks within one interval coalesce into one notification; a kick after
// it brings another.
func TestNotifierCoalesces(t *testing.T) {
	var calls atomic.Int32
	n := NewNotifier(time.Hour, func(context.Context) { calls.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 5 {
		n.Kick()
	}
	go n.Run(ctx)
	if err := poll.Until(ctx, 5*time.Second, func(context.Context) error {
		if calls.Load() == 0 {
			return context.DeadlineExceeded
		}
		return nil
	}); err != nil {
		t.Fatalf("no notification after five kicks: %v", err)
	}
	n.Kick() // within the hour: waits
	if got := calls.Load(); got != 1 {
		t.Errorf("%d notifications for kicks within one interval, want 1", got)
	}
}
