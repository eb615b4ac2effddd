package replicas

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"testing"
)

// fuzzTargetBytes is how many fuzz bytes one target takes: a weight mode,
// then weight, minimum and maximum as 16-bit numbers.
const fuzzTargetBytes = 7

// fuzzTargets decodes up to 12 targets named c0, c1, ... from data. The
// values stay within what the API allows (int32 replicas, weights and
// bounds), mostly small so that bounds bind often.
func fuzzTargets(data []byte) []Target {
	var out []Target
	for i := 0; len(data) >= fuzzTargetBytes && i < 12; i++ {
		mode, w, lo, hi := data[0], binary.LittleEndian.Uint16(data[1:]), binary.LittleEndian.Uint16(data[3:]), binary.LittleEndian.Uint16(data[5:])
		data = data[fuzzTargetBytes:]
		t := Target{Name: "c" + strconv.Itoa(i), Max: NoMax}
		switch mode % 6 {
		case 0:
			t.Weight = 0
		case 1:
			t.Weight = -float64(w)
		case 2:
			t.Weight = float64(w % 8)
		case 3:
			t.Weight = float64(w)
		case 4:
			t.Weight = float64(w) / math.MaxUint16 // a water-level weight in [0, 1]
		case 5:
			t.Weight = math.MaxInt32
		}
		if lo&0x8000 != 0 {
			t.Min = int64(lo & 0x7fff)
		} else {
			t.Min = int64(lo % 8)
		}
		switch {
		case hi&0x8000 != 0:
			t.Max = NoMax
		case hi&0x4000 != 0:
			t.Max = int64(hi & 0x3fff)
		default:
			t.Max = int64(hi % 16)
		}
		out = append(out, t)
	}
	return out
}

// fuzzTotal maps a fuzz number to a total: mostly small, sometimes up to
// the largest int32.
func fuzzTotal(n uint32) int64 {
	if n&0x80000000 != 0 {
		return int64(n & 0x7fffffff)
	}
	return int64(n % 200)
}

// encodeTargets is the inverse of fuzzTargets for seeds: mode 3 (the
// weight as it is), bounds below 0x4000.
func encodeTargets(ts ...[3]int) []byte {
	var out []byte
	for _, t := range ts {
		hi := uint16(0x8000) // no maximum
		if t[2] >= 0 {
			hi = uint16(t[2]) | 0x4000
		}
		lo := uint16(t[1]) | 0x8000
		out = append(out, 3)
		out = binary.LittleEndian.AppendUint16(out, uint16(t[0]))
		out = binary.LittleEndian.AppendUint16(out, lo)
		out = binary.LittleEndian.AppendUint16(out, hi)
	}
	return out
}

// FuzzSplit checks the replica split: a count per target, none negative,
// within each target's bounds, summing to the total whenever the bounds
// allow it (a target of weight zero takes only its minimum), each within
// one replica of its exact share, the same whatever the targets' order.
func FuzzSplit(f *testing.F) {
	seeds := []struct {
		total   int
		targets [][3]int // weight, min, max (-1: none)
	}{
		{9, [][3]int{{1, 0, -1}, {1, 0, -1}, {1, 0, -1}}},
		{10, [][3]int{{1, 0, -1}, {1, 0, -1}, {1, 0, -1}}},
		{12, [][3]int{{1, 0, -1}, {2, 0, -1}, {3, 0, -1}}},
		{6, [][3]int{{1, 0, -1}, {1, 5, -1}}},
		{9, [][3]int{{1, 0, 1}, {1, 0, -1}, {1, 0, -1}}},
		{5, [][3]int{{1, 0, 1}, {1, 0, 1}}},
		{5, [][3]int{{0, 2, -1}, {1, 0, -1}}},
		{4, [][3]int{{0, 0, -1}, {0, 0, -1}}},
		{0, [][3]int{{1, 0, -1}, {1, 0, -1}}},
		{3, nil},
		{4, [][3]int{{1, 3, 1}, {1, 0, -1}}},
		{4, [][3]int{{1, 3, -1}, {1, 3, -1}}},
		{36, [][3]int{{1, 0, -1}, {1, 0, -1}, {1, 0, -1}}},
	}
	for _, s := range seeds {
		f.Add(uint32(s.total), "ns/web", encodeTargets(s.targets...))
	}
	f.Add(uint32(0x80000000|math.MaxInt32), "ns/big", []byte{5, 0, 0, 0, 0, 0, 0x80, 3, 1, 0, 0xff, 0xff, 0xff, 0x7f, 4, 0xff, 0xff, 0, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, n uint32, seed string, data []byte) {
		total, targets := fuzzTotal(n), fuzzTargets(data)
		got := Split(total, targets, seed)
		checkSplit(t, total, targets, got)
		if again := Split(total, targets, seed); !slices.Equal(got, again) {
			t.Fatalf("Split is not deterministic: %v then %v", got, again)
		}
		reversed := slices.Clone(targets)
		slices.Reverse(reversed)
		back := Split(total, reversed, seed)
		checkSplit(t, total, reversed, back)
		slices.Reverse(back)
		if !slices.Equal(got, back) {
			t.Fatalf("Split(%d, %+v) = %v, but %v with the targets reversed", total, targets, got, back)
		}
	})
}

// TestSplitWeightsOfDifferentSizes: a large weight whose maximum binds
// and a small one give the small one exactly the rest, in either order
// (found by FuzzSplit: the slope of the water-filling lost the small
// weight to rounding, and the split exceeded the total).
func TestSplitWeightsOfDifferentSizes(t *testing.T) {
	targets := []Target{{Name: "big", Weight: math.MaxInt32, Max: 0}, {Name: "small", Weight: 0.188, Max: NoMax}}
	for _, ts := range [][]Target{targets, {targets[1], targets[0]}} {
		got := Split(math.MaxInt32, ts, "0")
		checkSplit(t, math.MaxInt32, ts, got)
	}
}

// checkSplit checks a split against its inputs.
func checkSplit(t *testing.T, total int64, targets []Target, got []int64) {
	t.Helper()
	if len(got) != len(targets) {
		t.Fatalf("Split returned %d counts for %d targets", len(got), len(targets))
	}
	w, lo := make([]float64, len(targets)), make([]int64, len(targets))
	var sumW float64
	var sumLo, sum int64
	for i, tg := range targets {
		w[i], lo[i] = math.Max(tg.Weight, 0), max(tg.Min, 0)
		sumW += w[i]
		sumLo += lo[i]
	}
	if sumW == 0 {
		for i := range w {
			w[i] = 1
		}
	}
	capacity, unbounded := int64(0), false // what the targets can take
	for i, tg := range targets {
		if got[i] < 0 {
			t.Fatalf("Split(%d, %+v) = %v: a negative count", total, targets, got)
		}
		sum += got[i]
		switch {
		case w[i] == 0:
			capacity += lo[i]
		case tg.Max < 0:
			unbounded = true
		default:
			capacity += max(tg.Max, lo[i])
		}
	}
	if total <= 0 {
		if sum != 0 {
			t.Fatalf("Split(%d, %+v) = %v, want nothing", total, targets, got)
		}
		return
	}
	if sumLo >= total {
		for i := range targets {
			if got[i] > lo[i] {
				t.Fatalf("Split(%d, %+v) = %v: the minimums exceed the total, yet %s gets more than its minimum", total, targets, got, targets[i].Name)
			}
		}
		if sum != total {
			t.Fatalf("Split(%d, %+v) = %v sums to %d", total, targets, got, sum)
		}
		return
	}
	want := total
	if !unbounded {
		want = min(total, capacity)
	}
	if sum != want {
		t.Fatalf("Split(%d, %+v) = %v sums to %d, want %d", total, targets, got, sum, want)
	}
	_, hi := bounds(targets)
	share := waterFill(float64(total), w, lo, hi)
	for i, tg := range targets {
		if got[i] < lo[i] || (tg.Max >= 0 && got[i] > max(tg.Max, lo[i])) {
			t.Fatalf("Split(%d, %+v) = %v: %s is outside [%d, %d]", total, targets, got, tg.Name, lo[i], tg.Max)
		}
		if w[i] == 0 && got[i] != lo[i] {
			t.Fatalf("Split(%d, %+v) = %v: %s of weight zero gets more than its minimum", total, targets, got, tg.Name)
		}
		if math.Abs(float64(got[i])-share[i]) >= 1+1e-6 {
			t.Fatalf("Split(%d, %+v) = %v: %s gets %d for an exact share of %g", total, targets, got, tg.Name, got[i], share[i])
		}
	}
}

// FuzzWaterLevel checks the water-level weights: one per cluster, each in
// [0, 1], summing to 1, zero for a cluster with nothing available or
// nothing allocatable (unless all are even), and a split by them that
// still meets FuzzSplit's checks.
func FuzzWaterLevel(f *testing.F) {
	capacities := func(c ...[2]int64) []byte {
		var out []byte
		for _, x := range c {
			out = binary.LittleEndian.AppendUint64(out, uint64(x[0]))
			out = binary.LittleEndian.AppendUint64(out, uint64(x[1]))
		}
		return out
	}
	f.Add(uint32(10), int32(0), capacities([2]int64{100, 50}, [2]int64{100, 10}, [2]int64{200, 40}))
	f.Add(uint32(10), int32(200), capacities([2]int64{100, 50}, [2]int64{100, 10}, [2]int64{200, 40}))
	f.Add(uint32(7), int32(0), capacities([2]int64{100, 0}, [2]int64{200, 0}, [2]int64{300, 0}))
	f.Add(uint32(7), int32(140), capacities([2]int64{0, 0}, [2]int64{0, 0}))
	f.Add(uint32(5), int32(0), capacities([2]int64{100, 0}, [2]int64{100, 50}))
	f.Add(uint32(5), int32(-5), capacities([2]int64{100, -20}, [2]int64{100, 50}))
	f.Add(uint32(5), int32(1), capacities([2]int64{0, 20}, [2]int64{100, 0}))
	f.Add(uint32(0x80000000|1000), int32(1), capacities([2]int64{math.MaxInt64, math.MaxInt64}, [2]int64{math.MaxInt64, 1}, [2]int64{-math.MaxInt64, math.MaxInt64}))
	f.Fuzz(func(t *testing.T, n uint32, capPercent int32, data []byte) {
		var clusters []Capacity
		for len(data) >= 16 && len(clusters) < 12 {
			clusters = append(clusters, Capacity{
				Total:     float64(int64(binary.LittleEndian.Uint64(data))),
				Available: float64(int64(binary.LittleEndian.Uint64(data[8:]))),
			})
			data = data[16:]
		}
		w := WaterLevel(clusters, float64(capPercent)/100)
		if len(w) != len(clusters) {
			t.Fatalf("WaterLevel returned %d weights for %d clusters", len(w), len(clusters))
		}
		even := len(w) > 0
		var sum float64
		for i, x := range w {
			if math.IsNaN(x) || x < 0 || x > 1+1e-12 {
				t.Fatalf("WaterLevel(%+v) = %v: weight %d is outside [0, 1]", clusters, w, i)
			}
			sum += x
			even = even && x == w[0]
		}
		if len(w) > 0 && math.Abs(sum-1) > 1e-9 {
			t.Fatalf("WaterLevel(%+v) = %v sums to %v", clusters, w, sum)
		}
		if !even {
			for i, c := range clusters {
				if (c.Available <= 0 || c.Total <= 0) && w[i] != 0 {
					t.Fatalf("WaterLevel(%+v) = %v: cluster %d with nothing available or allocatable has weight %v", clusters, w, i, w[i])
				}
			}
		}
		targets := make([]Target, len(w))
		for i := range w {
			targets[i] = Target{Name: "c" + strconv.Itoa(i), Weight: w[i], Max: NoMax}
		}
		total := fuzzTotal(n)
		checkSplit(t, total, targets, Split(total, targets, "ns/web"))
	})
}

// FuzzAvoidDisruption checks rescheduling without disruption: the result
// sums to the desired total, the same total keeps the current counts,
// scaling down only shrinks clusters above their desired count (never
// below it), scaling up only grows clusters below it (never above it), and
// the order of the clusters does not matter.
func FuzzAvoidDisruption(f *testing.F) {
	pairs := func(p ...[2]uint16) []byte {
		var out []byte
		for _, x := range p {
			out = binary.LittleEndian.AppendUint16(out, x[0])
			out = binary.LittleEndian.AppendUint16(out, x[1])
		}
		return out
	}
	f.Add("ns/web", pairs([2]uint16{15, 5}, [2]uint16{15, 5}, [2]uint16{0, 5}))
	f.Add("ns/web", pairs([2]uint16{15, 12}, [2]uint16{15, 12}, [2]uint16{0, 12}))
	f.Add("ns/web", pairs([2]uint16{10, 15}, [2]uint16{10, 15}, [2]uint16{10, 0}))
	f.Add("ns/web", pairs([2]uint16{10, 4}, [2]uint16{2, 4}, [2]uint16{8, 4}))
	f.Add("ns/web", pairs([2]uint16{10, 6}, [2]uint16{2, 6}, [2]uint16{0, 6}))
	f.Add("ns/web", pairs([2]uint16{math.MaxUint16, 0}, [2]uint16{0, math.MaxUint16}))
	f.Fuzz(func(t *testing.T, seed string, data []byte) {
		var current, desired []int64
		var names []string
		for len(data) >= 4 && len(current) < 12 {
			current = append(current, int64(binary.LittleEndian.Uint16(data)))
			desired = append(desired, int64(binary.LittleEndian.Uint16(data[2:])))
			names = append(names, "c"+strconv.Itoa(len(names)))
			data = data[4:]
		}
		got := AvoidDisruption(current, desired, names, seed)
		checkAvoidDisruption(t, current, desired, got)
		if again := AvoidDisruption(current, desired, names, seed); !slices.Equal(got, again) {
			t.Fatalf("AvoidDisruption is not deterministic: %v then %v", got, again)
		}
		rc, rd, rn := slices.Clone(current), slices.Clone(desired), slices.Clone(names)
		slices.Reverse(rc)
		slices.Reverse(rd)
		slices.Reverse(rn)
		back := AvoidDisruption(rc, rd, rn, seed)
		slices.Reverse(back)
		if !slices.Equal(got, back) {
			t.Fatalf("AvoidDisruption(%v, %v) = %v, but %v with the clusters reversed", current, desired, got, back)
		}
	})
}

// checkAvoidDisruption checks a plan reached without disruption.
func checkAvoidDisruption(t *testing.T, current, desired, got []int64) {
	t.Helper()
	var cur, want, sum int64
	for i := range current {
		cur += current[i]
		want += desired[i]
		sum += got[i]
	}
	if len(got) != len(current) || sum != want {
		t.Fatalf("AvoidDisruption(%v, %v) = %v, want %d in all", current, desired, got, want)
	}
	for i := range got {
		lo, hi := current[i], current[i] // what the cluster may end with
		switch {
		case want < cur && current[i] > desired[i]:
			lo = desired[i]
		case want > cur && current[i] < desired[i]:
			hi = desired[i]
		}
		if got[i] < lo || got[i] > hi {
			t.Fatalf("AvoidDisruption(%v, %v) = %v: cluster %d ends with %d, outside [%d, %d]", current, desired, got, i, got[i], lo, hi)
		}
	}
}
