package member

import (
	"context"
	"time"
)

// Notifier coalesces change signals: after Kick, Run calls notify once,
// then waits interval before the next call, so that any number of kicks
// within an interval cause one notification. Push and pull sessions use
// it to wake the cluster controller.
type Notifier struct {
	kick     chan struct{}
	interval time.Duration
	notify   func(context.Context)
}

// NewNotifier returns a Notifier calling notify (nil: nothing) at most
// once per interval.
func NewNotifier(interval time.Duration, notify func(context.Context)) *Notifier {
	return &Notifier{kick: make(chan struct{}, 1), interval: interval, notify: notify}
}

// Kick asks for a notification; it never blocks.
func (n *Notifier) Kick() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Run delivers the notifications until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		if n.notify != nil {
			n.notify(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.interval):
		}
	}
}
