// Package poll waits for a condition with a deadline, the only way Flotilla's
// code and tests wait: never a sleep. On timeout the condition's last error
// says what was seen.
package poll

import (
	"context"
	"errors"
	"time"
)

// Until calls cond at once and then at growing intervals (100ms up to 1s)
// until it returns nil, timeout passes, or ctx ends; it then returns nil or
// cond's last error.
//
// A cond cut short by the deadline (its error caused by the context's end)
// says nothing of what was seen: the error of the call before it is kept
// with the context's.
func Until(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 100 * time.Millisecond
	var last error
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && last != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			return errors.Join(last, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return err
		case <-time.After(interval):
		}
		interval = min(interval*3/2, time.Second)
	}
}
