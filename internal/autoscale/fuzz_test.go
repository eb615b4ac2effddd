package autoscale

import (
	"testing"
	"time"
)

// FuzzDecide: whatever the usage, history and policies, a decision stays
// within min and max (or between current and the bound when current is
// outside them), never moves against the disabled way while current is
// within the bounds, never scales down past scale-down protection's
// step, or at all with an invalid metric while within the bounds, and
// records exactly the change it makes.
func FuzzDecide(f *testing.F) {
	f.Add(int32(10), int32(2), int32(30), int64(5000), int32(10), int32(100), int32(4), uint8(0), uint8(0), int32(3), int64(10), int32(-1), false)
	f.Add(int32(20), int32(1), int32(100), int64(100), int32(20), int32(500), int32(3), uint8(1), uint8(2), int32(-2), int64(30), int32(50), false)
	f.Add(int32(40), int32(1), int32(10), int64(100), int32(40), int32(500), int32(3), uint8(2), uint8(2), int32(20), int64(5), int32(25), true)
	f.Fuzz(func(t *testing.T, current, lo, hi int32, used int64, ready, perPod, value int32, upSel, downSel uint8, change int32, ago int64, step int32, invalid bool) {
		if current < 0 || current > 100000 || lo < 0 || hi < lo || hi > 100000 || used < 0 || ready < 0 || ready > 100000 || perPod < 0 || value < 0 || value > 1000 {
			return
		}
		selects := []Select{SelectMax, SelectMin, SelectDisabled}
		t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
		up := Rules{Rates: []Rate{{Value: value, Period: 15 * time.Second}, {Percent: true, Value: value, Period: time.Minute}}, Select: selects[int(upSel)%3]}
		down := Rules{Rates: []Rate{{Value: value, Period: 15 * time.Second}, {Percent: true, Value: value, Period: time.Minute}}, Select: selects[int(downSel)%3]}
		p := Policy{Min: lo, Max: hi, Up: &up, Down: &down}
		if step >= 0 {
			p.DownStep = &step
		}
		h := History{Events: []Event{{At: t0.Add(-time.Duration(ago%120) * time.Second), Change: change}}}
		metrics := []Metric{{Name: "cpu", PerPod: int64(perPod), Usage: Usage{Ready: ready, Used: used}}}
		if invalid {
			metrics = append(metrics, Metric{Name: "memory", Invalid: "no request"})
		}
		d, kept := Decide(metrics, current, p, h, t0)
		within := current >= lo && current <= hi
		if d.Replicas < 0 {
			t.Fatalf("negative replicas %d", d.Replicas)
		}
		if d.Replicas > max(hi, current) || d.Replicas < min(lo, current) {
			t.Fatalf("%d outside [%d, %d] from %d", d.Replicas, lo, hi, current)
		}
		if within && ((up.Select == SelectDisabled && d.Replicas > current) || (down.Select == SelectDisabled && d.Replicas < current)) {
			t.Fatalf("moved a disabled way: %d from %d", d.Replicas, current)
		}
		if within && invalid && d.Replicas < current {
			t.Fatalf("scaled down from %d to %d with an invalid metric", current, d.Replicas)
		}
		if p.DownStep != nil && d.Replicas < current && int64(current-d.Replicas)*100 > int64(current)*int64(step) {
			t.Fatalf("scaled down from %d to %d, past a step of %d%%", current, d.Replicas, step)
		}
		if d.Replicas != current {
			if last := kept.Events[len(kept.Events)-1]; last.Change != d.Replicas-current {
				t.Fatalf("recorded %+v for a change of %d", last, d.Replicas-current)
			}
		}
	})
}
