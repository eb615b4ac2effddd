package autoscale

import (
	"testing"
	"time"
)

func TestRecommend(t *testing.T) {
	cpu := func(ready, unready, missing int32, used int64) Metric {
		return Metric{Name: "cpu", PerPod: 500, Usage: Usage{Ready: ready, Unready: unready, Missing: missing, Used: used}} // 50% of 1 CPU
	}
	tests := []struct {
		name    string
		m       Metric
		current int32
		want    int32
	}{
		{"at target", cpu(10, 0, 0, 5000), 10, 10},
		{"within tolerance", cpu(10, 0, 0, 5400), 10, 10},
		{"twice the target doubles", cpu(10, 0, 0, 10000), 10, 20},
		{"half the target halves", cpu(10, 0, 0, 2500), 10, 5},
		{"scale up counts unready pods as idle", cpu(6, 4, 0, 9000), 10, 18}, // 300% over 6 → 180% over 10
		{"unready pods that would turn it around: no change", cpu(2, 8, 0, 1200), 10, 10},
		{"scale down counts unreported pods at target", cpu(6, 0, 4, 900), 10, 6}, // 30% over 6; (900+4×500)/(10×500) = 58% over 10 → 6
		{"no ready pod reports: no change", cpu(0, 5, 5, 0), 10, 10},
		{"ratio up but fewer pods counted: no change", cpu(1, 0, 0, 600), 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Recommend(tt.m, tt.current)
			if got != tt.want {
				t.Errorf("Recommend = %d (%s), want %d", got, why, tt.want)
			}
			if why == "" {
				t.Error("no description")
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	load := func(used int64) []Metric {
		return []Metric{{Name: "cpu", PerPod: 500, Usage: Usage{Ready: 10, Used: used}}}
	}
	p := Policy{Min: 2, Max: 30, DownWindow: 5 * time.Minute}

	d, hist := Decide(load(10000), 10, p, History{}, t0)
	if d.Replicas != 20 || d.Limited != "" {
		t.Errorf("scale up: %+v, want 20", d)
	}
	d, _ = Decide(load(50000), 10, p, History{}, t0)
	if d.Replicas != 20 || d.Limited != "rate" {
		t.Errorf("a jump of 10x: %+v, want 20 (at most double per pass)", d)
	}
	d, _ = Decide(load(100000), 20, p, History{}, t0)
	if d.Replicas != 30 || d.Limited != "max" {
		t.Errorf("past max: %+v, want 30 (max)", d)
	}
	d, _ = Decide(load(100), 10, p, History{}, t0)
	if d.Replicas != 2 || d.Limited != "min" {
		t.Errorf("below min: %+v, want 2 (min)", d)
	}
	// A drop right after a high recommendation waits for the window.
	d, hist = Decide(load(2500), 20, p, hist, t0.Add(time.Minute))
	if d.Replicas != 20 || d.Limited != "stabilization" {
		t.Errorf("scale down inside the window: %+v, want 20 (stabilized)", d)
	}
	d, _ = Decide(load(2500), 20, p, hist, t0.Add(7*time.Minute))
	if d.Replicas != 5 {
		t.Errorf("scale down after the window: %+v, want 5", d)
	}
	if d, _ := Decide(nil, 7, p, History{}, t0); d.Replicas != 7 {
		t.Errorf("no metric: %+v, want the current 7", d)
	}
}

func TestDecideFromASeed(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	idle := []Metric{{Name: "cpu", PerPod: 500, Usage: Usage{Ready: 20, Used: 200}}}
	p := Policy{Min: 2, Max: 30, DownWindow: 5 * time.Minute}
	// A new HPA or a restarted controller: no scale-down before a window.
	d, hist := Decide(idle, 20, p, Seed(20, t0), t0)
	if d.Replicas != 20 {
		t.Errorf("first pass of an idle workload: %+v, want 20 kept for the window", d)
	}
	if d, _ := Decide(idle, 20, p, hist, t0.Add(6*time.Minute)); d.Replicas != 2 {
		t.Errorf("after the window: %+v, want min 2", d)
	}
	p.Down = &Rules{Select: SelectDisabled}
	if d, _ := Decide(idle, 20, p, History{}, t0); d.Replicas != 20 || d.Limited != "disabled" {
		t.Errorf("scale-down disabled: %+v, want 20", d)
	}
}

// TestScalingPolicies: behavior.*.policies as Kubernetes applies them, a
// change counted against each policy's period from the replicas at its
// start.
func TestScalingPolicies(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	at := func(used int64, ready int32) []Metric {
		return []Metric{{Name: "cpu", PerPod: 100, Usage: Usage{Ready: ready, Used: used}}}
	}
	minute := time.Minute
	tests := []struct {
		name    string
		up      *Rules
		down    *Rules
		metrics []Metric
		current int32
		events  []Event
		want    int32
		limited string
	}{
		{"default up: +100% beats +4 from 10", nil, nil, at(5000, 10), 10, nil, 20, "rate"},
		{"default up: +4 beats +100% from 2", nil, nil, at(5000, 2), 2, nil, 6, "rate"},
		{"default up, already doubled in the period", nil, nil, at(5000, 20), 20, []Event{{At: t0.Add(-10 * time.Second), Change: 10}}, 20, "rate"},
		{"default up, the period over", nil, nil, at(5000, 20), 20, []Event{{At: t0.Add(-20 * time.Second), Change: 10}}, 40, "rate"},
		{"2 pods a minute", &Rules{Rates: []Rate{{Value: 2, Period: minute}}, Select: SelectMax}, nil, at(5000, 10), 10, nil, 12, "rate"},
		{"Max of 2 pods and 50%", &Rules{Rates: []Rate{{Value: 2, Period: minute}, {Percent: true, Value: 50, Period: minute}}, Select: SelectMax}, nil, at(5000, 10), 10, nil, 15, "rate"},
		{"Min of 2 pods and 50%", &Rules{Rates: []Rate{{Value: 2, Period: minute}, {Percent: true, Value: 50, Period: minute}}, Select: SelectMin}, nil, at(5000, 10), 10, nil, 12, "rate"},
		{"within the policy", &Rules{Rates: []Rate{{Value: 20, Period: minute}}, Select: SelectMax}, nil, at(1500, 10), 10, nil, 15, ""},
		{"up disabled", &Rules{Select: SelectDisabled}, nil, at(5000, 10), 10, nil, 10, "disabled"},
		{"down 10% a minute (truncated)", nil, &Rules{Rates: []Rate{{Percent: true, Value: 10, Period: minute}}, Select: SelectMax}, at(100, 25), 25, nil, 22, "rate"},
		{"down 3 pods a minute, 2 gone already", nil, &Rules{Rates: []Rate{{Value: 3, Period: minute}}, Select: SelectMax}, at(100, 20), 20, []Event{{At: t0.Add(-30 * time.Second), Change: -2}}, 19, "rate"},
		{"down: Max picks the larger drop", nil, &Rules{Rates: []Rate{{Value: 3, Period: minute}, {Percent: true, Value: 50, Period: minute}}, Select: SelectMax}, at(100, 20), 20, nil, 10, "rate"},
		{"down: Min picks the smaller drop", nil, &Rules{Rates: []Rate{{Value: 3, Period: minute}, {Percent: true, Value: 50, Period: minute}}, Select: SelectMin}, at(100, 20), 20, nil, 17, "rate"},
		{"up after a scale-down in the period: counted from its start", &Rules{Rates: []Rate{{Value: 2, Period: minute}}, Select: SelectMax}, nil, at(5000, 10), 10, []Event{{At: t0.Add(-30 * time.Second), Change: -3}}, 15, "rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Min: 1, Max: 100, Up: tt.up, Down: tt.down} // no stabilization windows
			d, h := Decide(tt.metrics, tt.current, p, History{Events: tt.events}, t0)
			if d.Replicas != tt.want || d.Limited != tt.limited {
				t.Errorf("Decide = %d (%q: %s), want %d (%q)", d.Replicas, d.Limited, d.Why, tt.want, tt.limited)
			}
			if d.Replicas != tt.current {
				if last := h.Events[len(h.Events)-1]; last.Change != d.Replicas-tt.current || !last.At.Equal(t0) {
					t.Errorf("the change was not recorded: %+v", h.Events)
				}
			}
		})
	}
}

// TestLegacyLimit: an HPA without behavior scales up to double, or 4,
// per evaluation and down without a rate limit, as Kubernetes does.
func TestLegacyLimit(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	at := func(used int64, ready int32) []Metric {
		return []Metric{{Name: "cpu", PerPod: 100, Usage: Usage{Ready: ready, Used: used}}}
	}
	p := Policy{Min: 1, Max: 100, Legacy: true}
	tests := []struct {
		name    string
		metrics []Metric
		current int32
		want    int32
		limited string
	}{
		{"double from 10", at(5000, 10), 10, 20, "rate"},
		{"4 from 1", at(5000, 1), 1, 4, "rate"},
		{"within the limit", at(1500, 10), 10, 15, ""},
		{"down unlimited", at(100, 20), 20, 1, ""},
	}
	for _, tt := range tests {
		d, _ := Decide(tt.metrics, tt.current, p, History{}, t0)
		if d.Replicas != tt.want || d.Limited != tt.limited {
			t.Errorf("%s: Decide = %d (%q), want %d (%q)", tt.name, d.Replicas, d.Limited, tt.want, tt.limited)
		}
	}
}

func TestMissingPodsCountAtTheRequestWhenScalingDown(t *testing.T) {
	// Target 50% of a 1000m request: 500m per pod. 4 pods at 100m, 4
	// without metrics counted at their request (1000m, more than the
	// target): (400+4000)/(8×500) = 110% → no scale-down.
	m := Metric{Name: "cpu", PerPod: 500, MissingAt: 1000, Usage: Usage{Ready: 4, Missing: 4, Used: 400}}
	if got, why := Recommend(m, 8); got != 8 {
		t.Errorf("Recommend = %d (%s), want 8", got, why)
	}
}

// TestBoundsLeftOutMetricsAndProtection: Kubernetes' rules for replicas
// outside min and max and for metrics that cannot be read, a negative
// period start, a ratio past int32, and the host's scale-down protection.
func TestBoundsLeftOutMetricsAndProtection(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	cpu := func(used int64) Metric {
		return Metric{Name: "cpu", PerPod: 500, Usage: Usage{Ready: 10, Used: used}}
	}
	pct := func(n int32) *int32 { return &n }
	disabled := Rules{Select: SelectDisabled}
	upByPercent := Rules{Rates: []Rate{{Percent: true, Value: 100, Period: 10 * time.Minute}}, Select: SelectMax}
	busy := []Recommendation{{At: t0.Add(-time.Minute), Replicas: 30}} // inside the 5-minute window
	tests := []struct {
		name        string
		metrics     []Metric
		current     int32
		policy      Policy
		history     History
		want        int32
		wantLimited string
	}{
		{"max lowered below current: straight to it, past the window", []Metric{cpu(15000)}, 30,
			Policy{Min: 1, Max: 10, DownWindow: 5 * time.Minute}, History{Recommendations: busy}, 10, "max"},
		{"above max with scale-down disabled: still to max", []Metric{cpu(15000)}, 30,
			Policy{Min: 1, Max: 10, Down: &disabled}, History{}, 10, "max"},
		{"min raised above current: straight to it, past the rate", []Metric{cpu(500)}, 2,
			Policy{Min: 12, Max: 30, Up: &Rules{Rates: []Rate{{Value: 1, Period: time.Minute}}, Select: SelectMax}}, History{}, 12, "min"},
		{"below min with scale-up disabled: still to min", []Metric{cpu(500)}, 2,
			Policy{Min: 5, Max: 30, Up: &disabled}, History{}, 5, "min"},
		{"above max under scale-down protection: one allowed step", []Metric{cpu(15000)}, 30,
			Policy{Min: 1, Max: 10, DownStep: pct(50)}, History{}, 15, "protection"},
		{"a metric left out allows no scale-down", []Metric{cpu(1000), {Name: "memory", Invalid: "no request"}}, 10,
			Policy{Min: 1, Max: 30}, History{}, 10, ""},
		{"a metric left out still lets the others scale up", []Metric{cpu(10000), {Name: "memory", Invalid: "no request"}}, 10,
			Policy{Min: 1, Max: 30}, History{}, 20, ""},
		{"without scale-down protection: 10 straight down to 1", []Metric{cpu(500)}, 10,
			Policy{Min: 1, Max: 30}, History{}, 1, ""},
		{"scale-down protection of 50% steps 10 down to 5", []Metric{cpu(500)}, 10,
			Policy{Min: 1, Max: 30, DownStep: pct(50)}, History{}, 5, "protection"},
		{"scale-down protection of 50% keeps 3 at 2", []Metric{cpu(100)}, 3,
			Policy{Min: 1, Max: 30, DownStep: pct(50)}, History{}, 2, "protection"},
		{"scale-down protection of 0% allows no scale-down", []Metric{cpu(500)}, 10,
			Policy{Min: 1, Max: 30, DownStep: pct(0)}, History{}, 10, "protection"},
		{"replicas lowered by hand after the autoscaler's scale-up: no scale-up in the period", []Metric{cpu(20000)}, 5,
			Policy{Min: 1, Max: 30, Up: &upByPercent}, History{Events: []Event{{At: t0.Add(-time.Minute), Change: 10}}}, 5, "rate"},
		{"a ratio past int32 scales to max", []Metric{{Name: "memory", PerPod: 1, Usage: Usage{Ready: 10, Used: 1 << 40}}}, 10,
			Policy{Min: 1, Max: 30, Up: &Rules{Rates: []Rate{{Value: 1000, Period: time.Second}}, Select: SelectMax}}, History{}, 30, "max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, kept := Decide(tt.metrics, tt.current, tt.policy, tt.history, t0)
			if d.Replicas != tt.want || d.Limited != tt.wantLimited {
				t.Errorf("Decide = %d limited %q (%s), want %d limited %q", d.Replicas, d.Limited, d.Why, tt.want, tt.wantLimited)
			}
			if d.Replicas != tt.current {
				if n := len(kept.Events); n == 0 || kept.Events[n-1].Change != d.Replicas-tt.current {
					t.Errorf("events kept %+v, want the change %d last", kept.Events, d.Replicas-tt.current)
				}
			}
		})
	}
}
