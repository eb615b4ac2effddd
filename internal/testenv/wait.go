package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/poll"
)

// Eventually polls cond until it returns nil or timeout passes, then fails
// the test with the last thing cond saw.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := poll.Until(context.Background(), timeout, cond); err != nil {
		t.Fatalf("%s: not true after %s: last seen: %v", what, timeout, err)
	}
}
