package member

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// sec returns t0 plus s seconds.
func sec(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func obs(h Health, reason, msg string, at int) Observation {
	return Observation{Health: h, Reason: reason, Message: msg, At: sec(at)}
}

func healthy(at int) Observation { return obs(Healthy, ReasonReady, "ready", at) }

func unreachable(at int) Observation {
	return obs(Unreachable, ReasonUnreachable, "connection refused", at)
}

func notReady(at int) Observation {
	return obs(NotReady, ReasonAPIServerNotReady, "etcd failed", at)
}

// step is one observation and what the damper must answer to it.
type step struct {
	in          Observation
	wantHealth  Health
	wantReason  string
	wantMessage string // checked when not empty
	wantChanged bool
	exact       bool // the committed observation must equal in, At included
}

// commits expects o to become the committed state.
func commits(o Observation) step {
	return step{in: o, wantHealth: o.Health, wantReason: o.Reason, wantMessage: o.Message, wantChanged: true, exact: true}
}

// keeps expects the committed state to stay c (health and reason).
func keeps(o Observation, c Observation) step {
	return step{in: o, wantHealth: c.Health, wantReason: c.Reason, wantMessage: c.Message}
}

func TestDamperObserve(t *testing.T) {
	const failure, success = 20 * time.Second, 10 * time.Second
	h0 := healthy(0)
	u0 := unreachable(0)
	flapping := []step{commits(h0)}
	for s := 5; s <= 120; s += 10 {
		flapping = append(flapping, keeps(unreachable(s), h0), keeps(healthy(s+5), h0))
	}
	failingInTurns := []step{commits(h0)}
	for s := 5; s < 25; s += 10 {
		failingInTurns = append(failingInTurns, keeps(notReady(s), h0), keeps(unreachable(s+5), h0))
	}
	failingInTurns = append(failingInTurns, commits(notReady(25)))

	tests := []struct {
		name             string
		failure, success time.Duration
		steps            []step
	}{
		{
			name:    "first unhealthy observation commits at once",
			failure: failure, success: success,
			steps: []step{commits(u0)},
		},
		{
			name:    "first healthy observation commits at once",
			failure: failure, success: success,
			steps: []step{commits(h0)},
		},
		{
			name:    "unreachable must persist for FailureThreshold before leaving Healthy",
			failure: failure, success: success,
			steps: []step{
				commits(h0),
				keeps(unreachable(5), h0),
				keeps(unreachable(15), h0),
				keeps(unreachable(24), h0),
				commits(unreachable(25)),
				keeps(unreachable(30), unreachable(25)),
			},
		},
		{
			name:    "not ready must persist for FailureThreshold before leaving Healthy",
			failure: failure, success: success,
			steps: []step{
				commits(h0),
				keeps(notReady(1), h0),
				keeps(notReady(20), h0),
				commits(notReady(21)),
			},
		},
		{
			name:    "one healthy probe resets the pending failure",
			failure: failure, success: success,
			steps: []step{
				commits(h0),
				keeps(unreachable(5), h0),
				keeps(unreachable(20), h0),
				keeps(healthy(24), h0),
				keeps(unreachable(25), h0),
				keeps(unreachable(40), h0), // 35 s after the first failure, 15 s after the reset
				commits(unreachable(45)),
			},
		},
		{
			name:    "flapping never leaves Healthy",
			failure: failure, success: success,
			steps: flapping,
		},
		{
			name:    "failing in turns as NotReady and Unreachable still leaves Healthy",
			failure: failure, success: success,
			steps: failingInTurns,
		},
		{
			name:    "returning to Healthy needs SuccessThreshold",
			failure: failure, success: success,
			steps: []step{
				commits(u0),
				keeps(healthy(5), u0),
				keeps(healthy(14), u0),
				commits(healthy(15)),
			},
		},
		{
			name:    "one failed probe resets a pending recovery",
			failure: failure, success: success,
			steps: []step{
				commits(u0),
				keeps(healthy(5), u0),
				keeps(unreachable(10), u0),
				keeps(healthy(15), u0),
				keeps(healthy(24), u0),
				commits(healthy(25)),
			},
		},
		{
			name:    "Unreachable to NotReady needs FailureThreshold",
			failure: failure, success: success,
			steps: []step{
				commits(u0),
				keeps(notReady(5), u0),
				keeps(notReady(24), u0),
				commits(notReady(25)),
			},
		},
		{
			name:    "new reason within the same health commits at once",
			failure: failure, success: success,
			steps: []step{
				commits(obs(NotReady, ReasonUnauthorized, "401", 0)),
				commits(obs(NotReady, ReasonForbidden, "403", 1)),
			},
		},
		{
			name:    "new message with the same reason is not a change",
			failure: failure, success: success,
			steps: []step{
				commits(obs(Unreachable, ReasonUnreachable, "connection refused", 0)),
				keeps(obs(Unreachable, ReasonUnreachable, "timed out", 1), obs(Unreachable, ReasonUnreachable, "connection refused", 0)),
			},
		},
		{
			name:    "reason changing while a failure is pending keeps the pending time",
			failure: failure, success: success,
			steps: []step{
				commits(h0),
				keeps(obs(NotReady, ReasonUnauthorized, "401", 5), h0),
				commits(obs(NotReady, ReasonForbidden, "403", 25)),
			},
		},
		{
			name:    "zero thresholds commit every change at once",
			failure: 0, success: 0,
			steps: []step{
				commits(h0),
				commits(unreachable(1)),
				commits(healthy(2)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Damper{FailureThreshold: tt.failure, SuccessThreshold: tt.success}
			for i, s := range tt.steps {
				got, changed := d.Observe(s.in)
				if got.Health != s.wantHealth || got.Reason != s.wantReason || changed != s.wantChanged {
					t.Fatalf("step %d: Observe(%s/%s at +%v) = %s/%s, changed %v; want %s/%s, changed %v",
						i, s.in.Health, s.in.Reason, s.in.At.Sub(t0), got.Health, got.Reason, changed, s.wantHealth, s.wantReason, s.wantChanged)
				}
				if s.wantMessage != "" && got.Message != s.wantMessage {
					t.Fatalf("step %d: committed message = %q, want %q", i, got.Message, s.wantMessage)
				}
				if s.exact && got != s.in {
					t.Fatalf("step %d: committed %+v, want exactly the observation %+v", i, got, s.in)
				}
				c, ok := d.Committed()
				if !ok || c != got {
					t.Fatalf("step %d: Committed() = %+v, %v; want %+v, true", i, c, ok, got)
				}
			}
		})
	}
}

func TestNewDamper(t *testing.T) {
	tests := []struct {
		name        string
		initial     *Observation
		steps       []step
		wantInitial bool
	}{
		{
			name:  "no initial state commits the first observation",
			steps: []step{commits(unreachable(0))},
		},
		{
			name:        "restart while healthy causes no change",
			initial:     &Observation{Health: Healthy, Reason: ReasonReady, Message: "recorded", At: sec(-3600)},
			wantInitial: true,
			steps: []step{
				{in: obs(Healthy, ReasonReady, "fresh", 0), wantHealth: Healthy, wantReason: ReasonReady, wantMessage: "recorded"},
			},
		},
		{
			name:        "restart while unreachable causes no change",
			initial:     &Observation{Health: Unreachable, Reason: ReasonUnreachable, Message: "recorded", At: sec(-3600)},
			wantInitial: true,
			steps: []step{
				{in: obs(Unreachable, ReasonUnreachable, "fresh", 0), wantHealth: Unreachable, wantReason: ReasonUnreachable, wantMessage: "recorded"},
			},
		},
		{
			name:        "restart while unreachable needs SuccessThreshold to become healthy",
			initial:     &Observation{Health: Unreachable, Reason: ReasonUnreachable, At: sec(-3600)},
			wantInitial: true,
			steps: []step{
				keeps(healthy(0), Observation{Health: Unreachable, Reason: ReasonUnreachable}),
				keeps(healthy(9), Observation{Health: Unreachable, Reason: ReasonUnreachable}),
				commits(healthy(10)),
			},
		},
		{
			name:        "restart while healthy needs FailureThreshold to fail",
			initial:     &Observation{Health: Healthy, Reason: ReasonReady, At: sec(-3600)},
			wantInitial: true,
			steps: []step{
				keeps(unreachable(0), Observation{Health: Healthy, Reason: ReasonReady}),
				keeps(unreachable(19), Observation{Health: Healthy, Reason: ReasonReady}),
				commits(unreachable(20)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var initial *Observation
			if tt.initial != nil {
				o := *tt.initial
				initial = &o
			}
			d := NewDamper(20*time.Second, 10*time.Second, initial)
			if d.FailureThreshold != 20*time.Second || d.SuccessThreshold != 10*time.Second {
				t.Fatalf("thresholds = %v/%v, want 20s/10s", d.FailureThreshold, d.SuccessThreshold)
			}
			c, ok := d.Committed()
			if ok != tt.wantInitial {
				t.Fatalf("Committed() before any observation: ok = %v, want %v", ok, tt.wantInitial)
			}
			if tt.wantInitial {
				if c != *tt.initial {
					t.Fatalf("Committed() = %+v, want the initial %+v", c, *tt.initial)
				}
				// The damper keeps its own copy.
				initial.Health, initial.Reason = "Mutated", "Mutated"
				if c, _ := d.Committed(); c != *tt.initial {
					t.Fatalf("Committed() after mutating the initial observation = %+v, want %+v", c, *tt.initial)
				}
			}
			for i, s := range tt.steps {
				got, changed := d.Observe(s.in)
				if got.Health != s.wantHealth || got.Reason != s.wantReason || changed != s.wantChanged {
					t.Fatalf("step %d: Observe(%s/%s) = %s/%s, changed %v; want %s/%s, changed %v",
						i, s.in.Health, s.in.Reason, got.Health, got.Reason, changed, s.wantHealth, s.wantReason, s.wantChanged)
				}
				if s.wantMessage != "" && got.Message != s.wantMessage {
					t.Fatalf("step %d: committed message = %q, want %q", i, got.Message, s.wantMessage)
				}
				if s.exact && got != s.in {
					t.Fatalf("step %d: committed %+v, want exactly the observation %+v", i, got, s.in)
				}
			}
		})
	}
}

func TestDamperCommittedZeroValue(t *testing.T) {
	var d Damper
	if c, ok := d.Committed(); ok || c != (Observation{}) {
		t.Fatalf("Committed() of the zero Damper = %+v, %v; want zero, false", c, ok)
	}
	if h, left, ok := d.PendingFor(t0); ok || h != "" || left != 0 {
		t.Fatalf("PendingFor() of the zero Damper = %q, %v, %v; want \"\", 0, false", h, left, ok)
	}
}

func TestDamperPendingFor(t *testing.T) {
	tests := []struct {
		name     string
		observed []Observation
		now      time.Time
		wantOK   bool
		want     Health
		wantLeft time.Duration
	}{
		{
			name:     "nothing pending after the first commit",
			observed: []Observation{healthy(0)},
			now:      sec(1),
		},
		{
			name:     "failure pending right after it was seen",
			observed: []Observation{healthy(0), unreachable(5)},
			now:      sec(5),
			wantOK:   true, want: Unreachable, wantLeft: 20 * time.Second,
		},
		{
			name:     "failure pending counts down from its first observation",
			observed: []Observation{healthy(0), unreachable(5), unreachable(10)},
			now:      sec(12),
			wantOK:   true, want: Unreachable, wantLeft: 13 * time.Second,
		},
		{
			name:     "overdue pending state reports zero, not a negative time",
			observed: []Observation{healthy(0), unreachable(5)},
			now:      sec(60),
			wantOK:   true, want: Unreachable, wantLeft: 0,
		},
		{
			name:     "recovery pending uses SuccessThreshold",
			observed: []Observation{unreachable(0), healthy(5)},
			now:      sec(8),
			wantOK:   true, want: Healthy, wantLeft: 7 * time.Second,
		},
		{
			name:     "nothing pending after the pending state committed",
			observed: []Observation{healthy(0), unreachable(5), unreachable(25)},
			now:      sec(26),
		},
		{
			name:     "nothing pending after an observation agreeing with the committed state",
			observed: []Observation{healthy(0), unreachable(5), healthy(10)},
			now:      sec(11),
		},
		{
			name:     "a failure of another kind keeps counting from the first failure",
			observed: []Observation{healthy(0), notReady(5), unreachable(10)},
			now:      sec(10),
			wantOK:   true, want: Unreachable, wantLeft: 15 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Damper{FailureThreshold: 20 * time.Second, SuccessThreshold: 10 * time.Second}
			for _, o := range tt.observed {
				d.Observe(o)
			}
			h, left, ok := d.PendingFor(tt.now)
			if ok != tt.wantOK || h != tt.want || left != tt.wantLeft {
				t.Fatalf("PendingFor(+%v) = %q, %v, %v; want %q, %v, %v", tt.now.Sub(t0), h, left, ok, tt.want, tt.wantLeft, tt.wantOK)
			}
		})
	}
}

func TestClientLimitDefaults(t *testing.T) {
	tests := []struct {
		name      string
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{"unset: the defaults", 0, 0, defaultClientQPS, defaultClientBurst},
		{"set", 50, 100, 50, 100},
		{"qps without burst: twice the qps", 50, 0, 50, 100},
		{"no limit", -1, 0, -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{ClientQPS: tt.qps, ClientBurst: tt.burst}.WithDefaults()
			if o.ClientQPS != tt.wantQPS || o.ClientBurst != tt.wantBurst {
				t.Errorf("QPS, Burst = %v, %d; want %v, %d", o.ClientQPS, o.ClientBurst, tt.wantQPS, tt.wantBurst)
			}
		})
	}
}
