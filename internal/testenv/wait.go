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

// Consistently checks a state that must not change: it calls check once a
// second for window and fails the test at the first error.
func Consistently(t testing.TB, window time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(window)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := check(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			return
		}
		<-tick.C
	}
}
