package replicas

import (
	"math"
	"slices"
	"testing"
)

func equal(names ...string) []Target {
	t := make([]Target, len(names))
	for i, n := range names {
		t[i] = Target{Name: n, Weight: 1, Max: NoMax}
	}
	return t
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		total   int64
		targets []Target
		want    []int64
	}{
		{"even", 9, equal("a", "b", "c"), []int64{3, 3, 3}},
		{"seed example scale down", 15, equal("A", "B", "C"), []int64{5, 5, 5}},
		{"seed example scale up", 36, equal("A", "B", "C"), []int64{12, 12, 12}},
		{"weights 1:2:3", 12, []Target{{Name: "a", Weight: 1, Max: NoMax}, {Name: "b", Weight: 2, Max: NoMax}, {Name: "c", Weight: 3, Max: NoMax}}, []int64{2, 4, 6}},
		{"minimum raises a share", 6, []Target{{Name: "a", Weight: 1, Max: NoMax}, {Name: "b", Weight: 1, Min: 5, Max: NoMax}}, []int64{1, 5}},
		{"maximum caps a share, the rest goes to the others", 9, []Target{{Name: "a", Weight: 1, Max: 1}, {Name: "b", Weight: 1, Max: NoMax}, {Name: "c", Weight: 1, Max: NoMax}}, []int64{1, 4, 4}},
		{"maximums cannot hold the total", 5, []Target{{Name: "a", Weight: 1, Max: 1}, {Name: "b", Weight: 1, Max: 1}}, []int64{1, 1}},
		{"zero weight gets only its minimum", 5, []Target{{Name: "a", Weight: 0, Min: 2, Max: NoMax}, {Name: "b", Weight: 1, Max: NoMax}}, []int64{2, 3}},
		{"all weights zero split evenly", 4, []Target{{Name: "a", Max: NoMax}, {Name: "b", Max: NoMax}}, []int64{2, 2}},
		{"negative weight counts as zero", 4, []Target{{Name: "a", Weight: -3, Max: NoMax}, {Name: "b", Weight: 1, Max: NoMax}}, []int64{0, 4}},
		{"nothing to split", 0, equal("a", "b"), []int64{0, 0}},
		{"no targets", 3, nil, []int64{}},
		{"max below min is raised to min", 4, []Target{{Name: "a", Weight: 1, Min: 3, Max: 1}, {Name: "b", Weight: 1, Max: NoMax}}, []int64{3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Split(tt.total, tt.targets, "ns/web"); !slices.Equal(got, tt.want) {
				t.Errorf("Split(%d) = %v, want %v", tt.total, got, tt.want)
			}
		})
	}
}

func TestSplitRemaindersAreStableAndFair(t *testing.T) {
	targets := equal("a", "b", "c")
	got := Split(10, targets, "ns/web")
	if sum(got) != 10 {
		t.Fatalf("sum %d, want 10", sum(got))
	}
	for _, v := range got {
		if v != 3 && v != 4 {
			t.Fatalf("split %v is not 4/3/3 in some order", got)
		}
	}
	// The same inputs give the same plan, and the order of the targets
	// does not change who gets what.
	reversed := []Target{targets[2], targets[1], targets[0]}
	again := Split(10, reversed, "ns/web")
	if got[0] != again[2] || got[1] != again[1] || got[2] != again[0] {
		t.Errorf("order changed the plan: %v vs reversed %v", got, again)
	}
	// Different workloads do not all favour the same cluster.
	favoured := map[int]bool{}
	for _, seed := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"} {
		p := Split(4, equal("a", "b", "c"), seed)
		favoured[slices.Index(p, 2)] = true
	}
	if len(favoured) < 2 {
		t.Errorf("the extra replica always went to the same cluster: %v", favoured)
	}
}

func TestSplitMinimumsExceedTotal(t *testing.T) {
	got := Split(4, []Target{{Name: "a", Weight: 1, Min: 3, Max: NoMax}, {Name: "b", Weight: 1, Min: 3, Max: NoMax}}, "ns/web")
	if sum(got) != 4 || !(slices.Equal(got, []int64{3, 1}) || slices.Equal(got, []int64{1, 3})) {
		t.Errorf("Split = %v, want one minimum met (3) and the rest (1) to the other", got)
	}
}

// TestSplitMinimumsExceedTotalByWeight: when the minimums do not fit,
// the heaviest cluster gets its minimum first, whatever the object (the
// hash only breaks ties of weight).
func TestSplitMinimumsExceedTotalByWeight(t *testing.T) {
	targets := []Target{{Name: "a", Weight: 1, Min: 3, Max: NoMax}, {Name: "b", Weight: 5, Min: 3, Max: NoMax}, {Name: "c", Weight: 0, Min: 3, Max: NoMax}}
	for _, seed := range []string{"ns/web", "ns/api", "shop/db", "x", "y", "z"} {
		if got := Split(4, targets, seed); !slices.Equal(got, []int64{1, 3, 0}) {
			t.Errorf("seed %q: Split = %v, want [1 3 0] (b, the heaviest, first; then a; c has weight 0)", seed, got)
		}
	}
}

func TestAvoidDisruption(t *testing.T) {
	names := []string{"A", "B", "C"}
	tests := []struct {
		name             string
		current, desired []int64
		check            func(t *testing.T, got []int64)
	}{
		{"seed example: scale 30 to 15 after C joined", []int64{15, 15, 0}, []int64{5, 5, 5}, func(t *testing.T, got []int64) {
			if got[2] != 0 || got[0]+got[1] != 15 || got[0] > 8 || got[1] > 8 {
				t.Errorf("got %v, want A+B=15 with neither above 8 and C=0", got)
			}
		}},
		{"seed example: scale 30 to 36 after C joined", []int64{15, 15, 0}, []int64{12, 12, 12}, func(t *testing.T, got []int64) {
			if !slices.Equal(got, []int64{15, 15, 6}) {
				t.Errorf("got %v, want [15 15 6]", got)
			}
		}},
		{"same total keeps current", []int64{10, 10, 10}, []int64{15, 15, 0}, func(t *testing.T, got []int64) {
			if !slices.Equal(got, []int64{10, 10, 10}) {
				t.Errorf("got %v, want current [10 10 10]", got)
			}
		}},
		{"scale down shrinks only clusters above desired", []int64{10, 2, 8}, []int64{4, 4, 4}, func(t *testing.T, got []int64) {
			if sum(got) != 12 || got[1] != 2 || got[0] > 10 || got[2] > 8 {
				t.Errorf("got %v, want 12 in all, B untouched at 2, A and C only shrinking", got)
			}
		}},
		{"scale up grows only clusters below desired", []int64{10, 2, 0}, []int64{6, 6, 6}, func(t *testing.T, got []int64) {
			if sum(got) != 18 || got[0] != 10 || got[1] < 2 || got[2] < 0 {
				t.Errorf("got %v, want 18 in all, A untouched at 10", got)
			}
			// 6 new replicas split by deficit B=4 : C=6 -> 2.4 : 3.6 -> +2, +4.
			if !slices.Equal(got, []int64{10, 4, 4}) {
				t.Errorf("got %v, want [10 4 4]", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, AvoidDisruption(tt.current, tt.desired, names, "ns/web"))
		})
	}
}

func TestWaterLevel(t *testing.T) {
	tests := []struct {
		name     string
		clusters []Capacity
		cap      float64
		want     []float64
	}{
		// ΣA=100, ΣT=400: A/ΣA = .5 .1 .4; 1.4·T/ΣT = .35 .35 .7;
		// R = .35 .1 .4 (the cap binds for the first), normalised by .85.
		{"cap binds", []Capacity{{100, 50}, {100, 10}, {200, 40}}, 0, []float64{.35 / .85, .1 / .85, .4 / .85}},
		// Same clusters with a cap of 2: 2·T/ΣT = .5 .5 1, R = A/ΣA.
		{"cap of 2 does not bind", []Capacity{{100, 50}, {100, 10}, {200, 40}}, 2, []float64{.5, .1, .4}},
		{"nothing available: even", []Capacity{{100, 0}, {200, 0}, {300, 0}}, 0, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"nothing allocatable: even", []Capacity{{0, 0}, {0, 0}}, 0, []float64{.5, .5}},
		// A/ΣA = 0 1; cap .7 .7 -> R = 0 .7 -> 0 1.
		{"a full cluster gets nothing", []Capacity{{100, 0}, {100, 50}}, 0, []float64{0, 1}},
		{"negative available counts as zero", []Capacity{{100, -20}, {100, 50}}, 0, []float64{0, 1}},
		{"no clusters", nil, 0, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WaterLevel(tt.clusters, tt.cap)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestWaterLevelFeedsSplit(t *testing.T) {
	w := WaterLevel([]Capacity{{100, 50}, {100, 10}, {200, 40}}, 0)
	targets := []Target{{Name: "a", Weight: w[0], Max: NoMax}, {Name: "b", Weight: w[1], Max: NoMax}, {Name: "c", Weight: w[2], Max: NoMax}}
	// 17 replicas by .35/.85, .1/.85, .4/.85 = 7, 2, 8 exactly.
	if got := Split(17, targets, "ns/web"); !slices.Equal(got, []int64{7, 2, 8}) {
		t.Errorf("Split = %v, want [7 2 8]", got)
	}
}

func TestSplitZeroWeightGetsNoSpill(t *testing.T) {
	got := Split(10, []Target{{Name: "a", Weight: 1, Max: 1}, {Name: "b", Weight: 1, Max: 2}, {Name: "c", Weight: 0, Max: NoMax}}, "seed")
	if want := []int64{1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("Split = %v, want %v (the zero-weight target must not take what the capped ones cannot hold)", got, want)
	}
}
