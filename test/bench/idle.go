package main

import (
	"context"
	"fmt"
	"time"
)

// idleHold is how long the controllers must stay idle to count as idle.
const idleHold = 3 * time.Second

// idlePoll is how often idleness is checked.
const idlePoll = 250 * time.Millisecond

// ignoredControllers are left out of idleness: the cluster controller's
// health probes run on a timer and have nothing to do with workloads.
var ignoredControllers = map[string]bool{"cluster": true}

// cmLoad is what the controller-manager's metrics say about its work.
type cmLoad struct {
	// Depth is the summed work queue depth and Active the summed active
	// workers of the workload controllers.
	Depth, Active int
	// Controllers are each controller's counters since the process
	// started.
	Controllers map[string]controllerStats
}

// controllerStats are one controller's counters.
type controllerStats struct {
	// Reconciles counts reconciles by result (success, error, requeue,
	// requeue_after).
	Reconciles map[string]int `json:"reconciles"`
	// Seconds is the time spent in reconciles.
	Seconds float64 `json:"reconcileSeconds"`
}

// total is the number of reconciles, any result.
func (c controllerStats) total() int {
	n := 0
	for _, v := range c.Reconciles {
		n += v
	}
	return n
}

// idle reports whether the workload controllers have nothing to do.
func (l cmLoad) idle() bool { return l.Depth == 0 && l.Active == 0 }

// workloadReconciles is the number of reconciles of the workload
// controllers (all but ignoredControllers), any result.
func (l cmLoad) workloadReconciles() int {
	n := 0
	for name, c := range l.Controllers {
		if !ignoredControllers[name] {
			n += c.total()
		}
	}
	return n
}

// reconciles is a controller's number of reconciles, any result.
func (l cmLoad) reconciles(controller string) int { return l.Controllers[controller].total() }

// cmLoadNow reads the controller-manager's metrics. It fails until the
// controllers run (after the leader election).
func (b *bench) cmLoadNow(ctx context.Context) (cmLoad, error) {
	cm, err := b.controllerManager()
	if err != nil {
		return cmLoad{}, err
	}
	url, err := cmMetricsURL(cm)
	if err != nil {
		return cmLoad{}, err
	}
	samples, err := fetchMetrics(ctx, url)
	if err != nil {
		return cmLoad{}, err
	}
	return loadFrom(samples, url)
}

// loadFrom reads a cmLoad from the controller-manager's samples.
func loadFrom(samples []sample, url string) (cmLoad, error) {
	workload := func(l map[string]string) bool { return !ignoredControllers[l["controller"]] }
	depth, foundDepth := sum(samples, "workqueue_depth", workload)
	active, foundActive := sum(samples, "controller_runtime_active_workers", workload)
	if !foundDepth || !foundActive {
		return cmLoad{}, fmt.Errorf("%s has no workqueue_depth or controller_runtime_active_workers yet", url)
	}
	l := cmLoad{Depth: int(depth), Active: int(active), Controllers: map[string]controllerStats{}}
	stats := func(name string) controllerStats {
		c, ok := l.Controllers[name]
		if !ok {
			c = controllerStats{Reconciles: map[string]int{}}
		}
		return c
	}
	for _, s := range samples {
		name := s.labels["controller"]
		switch s.name {
		case "controller_runtime_reconcile_total":
			c := stats(name)
			c.Reconciles[s.labels["result"]] += int(s.value)
			l.Controllers[name] = c
		case "controller_runtime_reconcile_time_seconds_sum":
			c := stats(name)
			c.Seconds += s.value
			l.Controllers[name] = c
		}
	}
	return l, nil
}

// since returns the controllers' counters accumulated after before.
func (l cmLoad) since(before cmLoad) map[string]controllerStats {
	out := map[string]controllerStats{}
	for name, now := range l.Controllers {
		was := before.Controllers[name]
		d := controllerStats{Reconciles: map[string]int{}, Seconds: now.Seconds - was.Seconds}
		for result, v := range now.Reconciles {
			if v -= was.Reconciles[result]; v != 0 {
				d.Reconciles[result] = v
			}
		}
		out[name] = d
	}
	return out
}

// idleResult is what waitIdle observed.
type idleResult struct {
	// running is when the controllers' metrics were first readable (a
	// restarted controller-manager's controllers start once it leads).
	running time.Time
	// since is when the final idle stretch began.
	since time.Time
	// load is the last reading.
	load cmLoad
}

// waitIdle polls the controller-manager until its workload controllers
// have been idle for idleHold with at least minPropagate propagate
// reconciles since it started. Idle: empty queues, no active worker and no
// reconcile during the whole stretch (a delayed requeue, which the queue
// depth does not show, ends it). Unreadable metrics (a controller-manager
// starting) count as busy.
func (b *bench) waitIdle(ctx context.Context, minPropagate int, timeout time.Duration) (idleResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(idlePoll)
	defer tick.Stop()
	var (
		r       idleResult
		lastErr error
		done    int // workload reconciles when the idle stretch began
		logged  = time.Now()
	)
	for {
		now := time.Now()
		l, err := b.cmLoadNow(ctx)
		switch {
		case err != nil:
			r.since, lastErr = time.Time{}, err
		case !l.idle() || l.reconciles("propagate") < minPropagate:
			r.since, r.load, lastErr = time.Time{}, l, nil
		default:
			r.load, lastErr = l, nil
			if n := l.workloadReconciles(); r.since.IsZero() || n != done {
				r.since, done = now, n
			}
			if now.Sub(r.since) >= idleHold {
				return r, nil
			}
		}
		if err == nil && r.running.IsZero() {
			r.running = now
		}
		if time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			logf("  waiting for the controller-manager to be idle: depth %d, active %d, propagate reconciles %d/%d (last error: %v)",
				r.load.Depth, r.load.Active, r.load.reconciles("propagate"), minPropagate, lastErr)
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("controller-manager not idle within %s: depth %d, active %d, propagate reconciles %d (want ≥ %d), last error: %v",
				timeout, r.load.Depth, r.load.Active, r.load.reconciles("propagate"), minPropagate, lastErr)
		case <-tick.C:
		}
	}
}
