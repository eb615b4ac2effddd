package replicas

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestDuplicate(t *testing.T) {
	tests := []struct {
		name string
		unit *framework.Unit
	}{
		{"duplicate with replicas", &framework.Unit{Key: "ns/web", Replicas: ptr.To[int32](5), Placement: &v1alpha1.Placement{}}},
		{"divide without replicas", &framework.Unit{Key: "ns/cm", Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}},
		{"no placement", &framework.Unit{Key: "ns/web", Replicas: ptr.To[int32](5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := plan(t, tt.unit, ranked(mc("A"), mc("B"))), m("A=-1", "B=-1"); !maps.Equal(got, want) {
				t.Errorf("plan %s, want both clusters without replicas", show(got))
			}
		})
	}
}

// TestSeedExamples are the seed's worked examples: A and B run 15 each, C
// has just joined, equal weights.
func TestSeedExamples(t *testing.T) {
	within := func(limit int32) func(map[string]int32) bool {
		return func(p map[string]int32) bool {
			_, placedC := p["C"]
			return !placedC && p["A"]+p["B"] == 15 && p["A"] <= limit && p["B"] <= limit
		}
	}
	runCases(t, []planCase{
		{name: "scale 30 to 15 shrinks A and B (7/8), C gets none",
			unit: divide(15, current("A=15", "B=15")), chosen: abc(), check: within(8)},
		{name: "same with C placed at 0 and avoidDisruption explicit",
			unit: divide(15, current("A=15", "B=15", "C=0"), avoid(true)), chosen: abc(), check: within(8)},
		{name: "scale 30 to 36 gives C the new 6",
			unit: divide(36, current("A=15", "B=15")), chosen: abc(), want: m("A=15", "B=15", "C=6")},
		{name: "without avoidDisruption, 15 is 5/5/5",
			unit: divide(15, current("A=15", "B=15"), avoid(false)), chosen: abc(), want: m("A=5", "B=5", "C=5")},
		{name: "without avoidDisruption, 36 is 12/12/12",
			unit: divide(36, current("A=15", "B=15"), avoid(false)), chosen: abc(), want: m("A=12", "B=12", "C=12")},
	})
}

func TestStatic(t *testing.T) {
	runCases(t, []planCase{
		{name: "equal weights", unit: divide(9), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		{name: "remainder to one cluster", unit: divide(10), chosen: abc(),
			check: func(p map[string]int32) bool { return p["A"]+p["B"]+p["C"] == 10 && len(p) == 3 }},
		{name: "listed weights; unlisted C gets nothing",
			unit: divide(9, weights(w("A", 1), w("B", 2))), chosen: abc(), want: m("A=3", "B=6")},
		{name: "weight 0 with a minimum gets the minimum",
			unit: divide(8, weights(w("A", 1), w("B", 1), wMin("C", 0, 2))), chosen: abc(), want: m("A=3", "B=3", "C=2")},
		{name: "every weight 0: the minimums alone, when the total allows",
			unit: divide(4, weights(wMin("A", 0, 2), wMin("B", 0, 2), w("C", 0))), chosen: abc(), want: m("A=2", "B=2")},
		{name: "every weight 0 and more than the minimums: refused, not shared equally",
			unit: divide(9, weights(wMin("A", 0, 2), w("B", 0), w("C", 0))), chosen: abc(),
			reason: "no chosen cluster has a positive weight for the 7 replicas above the minimums (a weight-0 cluster gets its minReplicas and nothing more)"},
		{name: "weight 0 without a minimum is left out",
			unit: divide(8, weights(w("A", 1), w("B", 0), w("C", 1))), chosen: abc(), want: m("A=4", "C=4")},
		{name: "weight dropped to 0: its running replicas stay (avoidDisruption)",
			unit: divide(9, current("A=3", "B=3", "C=3"), weights(w("A", 1), w("B", 1), w("C", 0))), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		{name: "unlisted now: the same",
			unit: divide(9, current("A=3", "B=3", "C=3"), weights(w("A", 1), w("B", 1))), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		{name: "weight 0: shrinks first on a scale-down",
			unit: divide(6, current("A=3", "B=3", "C=3"), weights(w("A", 1), w("B", 1), w("C", 0))), chosen: abc(), want: m("A=3", "B=3")},
		{name: "weight 0: a scale-up grows only the weighted",
			unit: divide(12, current("A=3", "B=3", "C=3"), weights(w("A", 1), w("B", 1), w("C", 0))), chosen: abc(),
			check: func(p map[string]int32) bool { return p["C"] == 3 && p["A"]+p["B"] == 9 && p["A"] >= 4 && p["B"] >= 4 }},
		{name: "weight 0 without avoidDisruption: drains",
			unit: divide(9, current("A=3", "B=3", "C=3"), weights(w("A", 1), w("B", 1), w("C", 0)), avoid(false)), chosen: abc(),
			check: func(p map[string]int32) bool { _, c := p["C"]; return !c && p["A"]+p["B"] == 9 }},
		{name: "maximum caps a share, the rest goes to the others",
			unit: divide(8, weights(wMax("A", 1, 2), w("B", 1), w("C", 1))), chosen: abc(), want: m("A=2", "B=3", "C=3")},
		{name: "minimum and maximum together",
			unit: divide(10, weights(wMin("A", 1, 6), wMax("B", 1, 1), w("C", 1))), chosen: abc(), want: m("A=6", "B=1", "C=3")},
		{name: "maximums below the total place what they hold",
			unit: divide(10, weights(wMax("A", 1, 2), wMax("B", 1, 3))), chosen: abc(), want: m("A=2", "B=3")},
		{name: "total 0 keeps every cluster with 0",
			unit: divide(0), chosen: abc(), want: m("A=0", "B=0", "C=0")},
		{name: "total 0 keeps the weighted clusters with 0",
			unit: divide(0, weights(w("A", 1))), chosen: abc(), want: m("A=0")},
		{name: "clusters that get 0 are left out",
			unit: divide(2), chosen: abc(), check: func(p map[string]int32) bool {
				return len(p) == 2 && p["A"]+p["B"]+p["C"] == 2
			}},
		{name: "no chosen cluster is weighted",
			unit: divide(4, weights(w("X", 1))), chosen: abc(), reason: "none of the 3 chosen clusters has a replica weight"},
		{name: "no chosen cluster, total 0",
			unit: divide(0), chosen: nil, want: m()},
		{name: "no chosen cluster",
			unit: divide(3), chosen: nil, reason: "no cluster chosen for 3 replicas"},
		{name: "unknown weight mode",
			unit: divide(3, mode("Magic")), chosen: abc(), reason: `unknown weightMode "Magic"`},
	})
}

func TestNoScheduleTaint(t *testing.T) {
	tainted := func() []framework.ScoredCluster {
		return ranked(mc("A"), mc("B", taint("example.com/maintenance", corev1.TaintEffectNoSchedule)))
	}
	runCases(t, []planCase{
		{name: "a tainted cluster keeps what it holds and gets no more",
			unit: divide(12, current("A=4", "B=2"), avoid(false)), chosen: tainted(), want: m("A=10", "B=2")},
		{name: "the same with avoidDisruption",
			unit: divide(12, current("A=4", "B=2")), chosen: tainted(), want: m("A=10", "B=2")},
		{name: "it may shrink",
			unit: divide(2, current("A=4", "B=2"), avoid(false)), chosen: tainted(), want: m("A=1", "B=1")},
		{name: "a maxReplicas below what it holds still applies",
			unit: divide(12, current("A=4", "B=2"), weights(w("A", 1), wMax("B", 1, 1))), chosen: tainted(), want: m("A=11", "B=1")},
		{name: "a tainted cluster not holding replicas gets none",
			unit: divide(12, current("A=12")), chosen: tainted(), want: m("A=12")},
		{name: "placed without a count (was Duplicate) is holding none",
			unit: divide(12, current("A", "B")), chosen: tainted(), want: m("A=12")},
		{name: "a tolerated taint does not cap",
			unit:   divide(12, current("A=4", "B=2"), avoid(false), tolerate(corev1.Toleration{Key: "example.com/maintenance", Operator: corev1.TolerationOpExists})),
			chosen: tainted(), want: m("A=6", "B=6")},
		{name: "a PreferNoSchedule taint does not cap",
			unit: divide(12, avoid(false)), chosen: ranked(mc("A"), mc("B", taint("x", corev1.TaintEffectPreferNoSchedule))), want: m("A=6", "B=6")},
		{name: "nowhere to put a replica",
			unit: divide(3), chosen: ranked(mc("B", taint("x", corev1.TaintEffectNoSchedule))),
			reason: "no chosen cluster can take any of 3 replicas (maxReplicas, NoSchedule taints)"},
	})
}

func TestCapacityLimits(t *testing.T) {
	ab := func() []framework.ScoredCluster { return ranked(mc("A"), mc("B")) }
	runCases(t, []planCase{
		{name: "the replicas a limited cluster cannot run move to the other (avoidDisruption)",
			unit: divide(10, current("A=5", "B=5"), limit("A", 2)), chosen: ab(), want: m("A=2", "B=8")},
		{name: "the same without avoidDisruption",
			unit: divide(10, current("A=5", "B=5"), limit("A", 2), avoid(false)), chosen: ab(), want: m("A=2", "B=8")},
		{name: "a scale-up does not grow the limited cluster",
			unit: divide(20, current("A=2", "B=8"), limit("A", 2)), chosen: ab(), want: m("A=2", "B=18")},
		{name: "a limit of 0 takes the cluster out",
			unit: divide(10, current("A=5", "B=5"), limit("A", 0)), chosen: ab(), want: m("B=10")},
		{name: "a limit above the share changes nothing",
			unit: divide(10, current("A=5", "B=5"), limit("A", 7)), chosen: ab(), want: m("A=5", "B=5")},
		{name: "a lower maxReplicas still wins",
			unit: divide(10, current("A=5", "B=5"), limit("A", 4), weights(wMax("A", 1, 3), w("B", 1))), chosen: ab(), want: m("A=3", "B=7")},
		{name: "every cluster limited: what none can run waits in them, evenly",
			unit: divide(10, current("A=5", "B=5"), limit("A", 2), limit("B", 3)), chosen: ab(), check: func(p map[string]int32) bool {
				return p["A"]+p["B"] == 10 && p["A"] >= 4 && p["B"] >= 5
			}},
		{name: "a limited cluster takes what the others' maxReplicas leave",
			unit: divide(10, current("A=5", "B=5"), limit("A", 2), weights(w("A", 1), wMax("B", 1, 6))), chosen: ab(), want: m("A=4", "B=6")},
	})
}

func TestAvoidDisruption(t *testing.T) {
	abd := func() []framework.ScoredCluster { return ranked(mc("A"), mc("B"), mc("D")) }
	runCases(t, []planCase{
		{name: "a cluster that left is drained onto the newcomer",
			unit: divide(30, current("A=10", "B=10", "C=10")), chosen: abd(), want: m("A=10", "B=10", "D=10")},
		{name: "a cluster that left, and a scale-down: running replicas stay",
			unit: divide(24, current("A=10", "B=10", "C=10")), chosen: abd(), want: m("A=10", "B=10", "D=4")},
		{name: "a cluster that left, and a scale-down below what the others run",
			unit: divide(15, current("A=10", "B=10", "C=10")), chosen: abd(), check: func(p map[string]int32) bool {
				_, placedD := p["D"]
				return !placedD && p["A"]+p["B"] == 15 && p["A"] <= 8 && p["B"] <= 8
			}},
		{name: "a cluster that left, no newcomer: the others take its replicas",
			unit: divide(30, current("A=10", "B=10", "C=10")), chosen: ranked(mc("A"), mc("B")), want: m("A=15", "B=15")},
		{name: "weights newly listed without C: C weighs 0 and keeps what it runs (a weight change moves nothing)",
			unit: divide(30, current("A=10", "B=10", "C=10"), weights(w("A", 1), w("B", 1))), chosen: abc(), want: m("A=10", "B=10", "C=10")},
		{name: "the same without avoidDisruption: C is drained",
			unit: divide(30, current("A=10", "B=10", "C=10"), weights(w("A", 1), w("B", 1)), avoid(false)), chosen: abc(), want: m("A=15", "B=15")},
		{name: "every current cluster left: the plan as if new",
			unit: divide(9, current("X=5", "Y=4")), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		{name: "same total, changed weights: nothing moves",
			unit: divide(30, current("A=20", "B=10"), weights(w("A", 1), w("B", 2))), chosen: abc(), want: m("A=20", "B=10")},
		{name: "same total, changed weights, without avoidDisruption",
			unit: divide(30, current("A=20", "B=10"), weights(w("A", 1), w("B", 2)), avoid(false)), chosen: abc(), want: m("A=10", "B=20")},
		{name: "a lowered maxReplicas is honoured even at the same total",
			unit: divide(20, current("A=10", "B=10"), weights(wMax("A", 1, 5), w("B", 1))), chosen: abc(), want: m("A=5", "B=15")},
		{name: "a raised minReplicas is honoured even at the same total",
			unit: divide(20, current("A=10", "B=10"), weights(w("A", 1), w("B", 1), wMin("C", 1, 3))), chosen: abc(),
			check: func(p map[string]int32) bool {
				return p["C"] == 3 && p["A"]+p["B"] == 17 && p["A"] <= 10 && p["B"] <= 10
			}},
		{name: "a current placement without counts (was Duplicate) is not kept",
			unit: divide(9, current("A", "B")), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		{name: "scale to 0 keeps every cluster with 0",
			unit: divide(0, current("A=10", "B=10")), chosen: abc(), want: m("A=0", "B=0", "C=0")},
	})
}

func TestDeterministic(t *testing.T) {
	u := divide(10, current("A=1", "B=7"), weights(w("A", 3), w("B", 1), wMin("C", 2, 1)))
	first := plan(t, u, abc())
	for range 5 {
		if again := plan(t, u, abc()); !maps.Equal(first, again) {
			t.Fatalf("plans differ: %s vs %s", show(first), show(again))
		}
	}
	// The chosen order (the ranking) does not change a static split.
	if reordered := plan(t, u, ranked(mc("C"), mc("A"), mc("B"))); !maps.Equal(first, reordered) {
		t.Errorf("reordering changed the plan: %s vs %s", show(first), show(reordered))
	}
	// Remainders go by the key: some key gives a different cluster the
	// extra replica.
	favoured := map[string]bool{}
	for _, key := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		u := divide(4)
		u.Key = key
		for c, n := range plan(t, u, abc()) {
			if n == 2 {
				favoured[c] = true
			}
		}
	}
	if len(favoured) < 2 {
		t.Errorf("the extra replica always went to %v", favoured)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		args string
		cap  float64
		err  string
	}{
		{args: "", cap: 1.4},
		{args: "null", cap: 1.4},
		{args: "{}", cap: 1.4},
		{args: `{"defaultWaterLevelCapPercent": 200}`, cap: 2},
		{args: `{"defaultWaterLevelCapPercent": 99}`, err: "Replicas: defaultWaterLevelCapPercent 99 is outside 100 to 1000"},
		{args: `{"defaultWaterLevelCapPercent": 1001}`, err: "Replicas: defaultWaterLevelCapPercent 1001 is outside 100 to 1000"},
		{args: `{"cap": 2}`, err: `Replicas: invalid arguments: json: unknown field "cap"`},
		{args: `{"defaultWaterLevelCapPercent": "high"}`, err: "Replicas: invalid arguments: json: cannot unmarshal"},
		{args: `{} {}`, err: "Replicas: invalid arguments: data after the JSON object"},
	}
	for _, tt := range tests {
		p, err := New([]byte(tt.args))
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("New(%s) error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%s): %v", tt.args, err)
			continue
		}
		if got := p.(*Plugin).defaultCap; got != tt.cap || p.Name() != Name {
			t.Errorf("New(%s): cap %v name %q, want %v %q", tt.args, got, p.Name(), tt.cap, Name)
		}
	}
}

// TestShortfallIsNoted: replicas no chosen cluster can take leave a note
// in the decision's message, so that Scheduled=True does not read as the
// whole workload placed.
func TestShortfallIsNoted(t *testing.T) {
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cordoned := func(name string) *v1alpha1.MemberCluster {
		return mc(name, taint("example.com/maintenance", corev1.TaintEffectNoSchedule))
	}
	for _, tt := range []struct {
		name   string
		chosen []framework.ScoredCluster
		want   string
	}{
		{"a failed cluster's share has nowhere to go", ranked(cordoned("B"), cordoned("C")), "6 of 9 replicas placed: no chosen cluster can take the other 3"},
		{"all placed: no note", ranked(mc("B"), cordoned("C")), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.CycleState{}
			if _, st := p.(framework.ReplicasPlugin).Replicas(context.Background(), state, divide(9, current("A=3", "B=3", "C=3")), tt.chosen); !st.IsSuccess() {
				t.Fatalf("status %+v", st)
			}
			notes := strings.Join(framework.Notes(state), "; ")
			if tt.want == "" && notes != "" || !strings.Contains(notes, tt.want) {
				t.Errorf("notes %q, want %q", notes, tt.want)
			}
		})
	}
}
