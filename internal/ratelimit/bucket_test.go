package ratelimit

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestBucket(t *testing.T) {
	type step struct {
		at       time.Duration // after t0
		wantTake bool
		wantWait time.Duration // after the take (or the failed take)
	}
	tests := []struct {
		name      string
		perMinute float64
		burst     int
		steps     []step
	}{
		{
			name: "one a minute, burst one", perMinute: 1, burst: 1,
			steps: []step{
				{at: 0, wantTake: true, wantWait: time.Minute},
				{at: 30 * time.Second, wantTake: false, wantWait: 30 * time.Second},
				{at: 59 * time.Second, wantTake: false, wantWait: time.Second},
				{at: time.Minute, wantTake: true, wantWait: time.Minute},
			},
		},
		{
			name: "six a minute, burst three: three at once, then one per ten seconds", perMinute: 6, burst: 3,
			steps: []step{
				{at: 0, wantTake: true},
				{at: 0, wantTake: true},
				{at: 0, wantTake: true, wantWait: 10 * time.Second},
				{at: 0, wantTake: false, wantWait: 10 * time.Second},
				{at: 5 * time.Second, wantTake: false, wantWait: 5 * time.Second},
				{at: 10 * time.Second, wantTake: true, wantWait: 10 * time.Second},
				// A long pause refills to the burst, not beyond.
				{at: time.Hour, wantTake: true},
				{at: time.Hour, wantTake: true},
				{at: time.Hour, wantTake: true, wantWait: 10 * time.Second},
				{at: time.Hour, wantTake: false, wantWait: 10 * time.Second},
			},
		},
		{
			name: "a clock going backwards earns nothing", perMinute: 1, burst: 1,
			steps: []step{
				{at: time.Minute, wantTake: true, wantWait: time.Minute},
				{at: 0, wantTake: false, wantWait: time.Minute},
				{at: 2 * time.Minute, wantTake: true, wantWait: time.Minute},
			},
		},
		{
			name: "zero rate is unlimited", perMinute: 0, burst: 1,
			steps: []step{{at: 0, wantTake: true}, {at: 0, wantTake: true}, {at: 0, wantTake: true}},
		},
		{
			name: "burst below one is one", perMinute: 60, burst: 0,
			steps: []step{{at: 0, wantTake: true, wantWait: time.Second}, {at: 0, wantTake: false, wantWait: time.Second}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBucket(tc.perMinute, tc.burst)
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if got := b.Take(now); got != s.wantTake {
					t.Fatalf("step %d: Take at +%s = %v, want %v", i, s.at, got, s.wantTake)
				}
				if got := b.Wait(now); got != s.wantWait {
					t.Fatalf("step %d: Wait at +%s = %s, want %s", i, s.at, got, s.wantWait)
				}
			}
		})
	}
}

func TestBucketReturn(t *testing.T) {
	b := NewBucket(1, 1)
	if !b.Take(t0) {
		t.Fatal("first Take refused")
	}
	b.Return()
	if !b.Take(t0) {
		t.Fatal("Take after Return refused")
	}
	b.Return()
	b.Return() // never beyond the burst
	if !b.Take(t0) || b.Take(t0) {
		t.Fatal("Return filled the bucket beyond its burst")
	}
}

func TestKeyedTakeAll(t *testing.T) {
	k := NewKeyed(6, 1)
	if ok, _ := k.TakeAll([]string{"a"}, t0); !ok {
		t.Fatal("first token of a refused")
	}
	// b's bucket is full but a's is empty: nothing is taken from b.
	ok, wait := k.TakeAll([]string{"a", "b"}, t0.Add(4*time.Second))
	if ok || wait != 6*time.Second {
		t.Fatalf("TakeAll(a, b) = %v, %s; want false, 6s", ok, wait)
	}
	if ok, _ := k.TakeAll([]string{"b"}, t0.Add(4*time.Second)); !ok {
		t.Fatal("b lost its token to a refused TakeAll")
	}
	if ok, _ := k.TakeAll([]string{"a", "b"}, t0.Add(14*time.Second)); !ok {
		t.Fatal("TakeAll(a, b) refused once both refilled")
	}
	k.ReturnAll([]string{"a", "b"})
	if ok, _ := k.TakeAll([]string{"a", "b"}, t0.Add(14*time.Second)); !ok {
		t.Fatal("TakeAll(a, b) refused after ReturnAll")
	}
	if ok, _ := k.TakeAll(nil, t0); !ok {
		t.Fatal("TakeAll of no keys refused")
	}
	var unlimited *Keyed
	if ok, _ := unlimited.TakeAll([]string{"a"}, t0); !ok {
		t.Fatal("nil Keyed refused")
	}
	if ok, _ := NewKeyed(0, 1).TakeAll([]string{"a", "a", "a"}, t0); !ok {
		t.Fatal("zero-rate Keyed refused")
	}
}

func TestBurstFor(t *testing.T) {
	for _, tc := range []struct {
		perMinute float64
		want      int
	}{{0, 1}, {1, 1}, {6, 1}, {12, 2}, {60, 10}, {600, 100}} {
		if got := BurstFor(tc.perMinute); got != tc.want {
			t.Errorf("BurstFor(%g) = %d, want %d", tc.perMinute, got, tc.want)
		}
	}
}
