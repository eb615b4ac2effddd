package testenv

import (
	"context"
	"testing"
	"time"
)

// Eventually polls cond until it returns nil or timeout passes, then fails
// the test with the last thing cond saw.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := Poll(context.Background(), timeout, cond); err != nil {
		t.Fatalf("%s: not true after %s: last seen: %v", what, timeout, err)
	}
}

// Poll polls cond every 100ms (up to every second) until it returns nil or
// timeout passes; it then returns cond's last error.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 100 * time.Millisecond
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(interval):
		}
		if interval < time.Second {
			interval *= 2
		}
	}
}
