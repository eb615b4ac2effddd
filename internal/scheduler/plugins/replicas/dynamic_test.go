package replicas

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// cpus returns A, B and C with 100 cores allocatable and the given cores
// available.
func cpus(a, b, c string) []framework.ScoredCluster {
	return ranked(mc("A", cpu("100", a)), mc("B", cpu("100", b)), mc("C", cpu("100", c)))
}

func TestWaterLevel(t *testing.T) {
	wl := func(total int32, opts ...unitOpt) *framework.Unit {
		return divide(total, append([]unitOpt{mode(v1alpha1.WeightWaterLevel), requests("cpu", "1")}, opts...)...)
	}
	runCases(t, []planCase{
		// A/ΣA = .5 .3 .2; cap 2·(1/3) = .667 does not bind.
		{name: "weights .5/.3/.2, cap 200%", unit: wl(10, capPercent(200)), chosen: cpus("50", "30", "20"), want: m("A=5", "B=3", "C=2")},
		{name: "weights .5/.3/.2 over 100, cap 200%", unit: wl(100, capPercent(200)), chosen: cpus("50", "30", "20"), want: m("A=50", "B=30", "C=20")},
		// Default cap 1.4·(1/3) = .4667 binds A: R = .4667 .3 .2, sum
		// .9667: weights .4828 .3103 .2069. 10 → 4.83 3.10 2.07: 4 3 2 and
		// the largest remainder (A) gets the tenth.
		{name: "default cap binds A a little, 10 replicas", unit: wl(10), chosen: cpus("50", "30", "20"), want: m("A=5", "B=3", "C=2")},
		// 100 → 48.28 31.03 20.69: 48 31 20, the last to C (.69).
		{name: "default cap binds A a little, 100 replicas", unit: wl(100), chosen: cpus("50", "30", "20"), want: m("A=48", "B=31", "C=21")},
		// A/ΣA = .9 .05 .05, capped at .4667: R = .4667 .05 .05, sum
		// .5667: weights .8235 .0882 .0882. 10 → 8.24 .88 .88: 8 0 0,
		// then B and C (remainders .88) one each.
		{name: "cap binds hard, 10 replicas", unit: wl(10), chosen: cpus("90", "5", "5"), want: m("A=8", "B=1", "C=1")},
		// 100 → 82.35 8.82 8.82: 82 8 8, then B and C.
		{name: "cap binds hard, 100 replicas", unit: wl(100), chosen: cpus("90", "5", "5"), want: m("A=82", "B=9", "C=9")},
		// Uncapped it would be 9/.5/.5.
		{name: "cap 1000% lets A take nearly all", unit: wl(10, capPercent(1000)), chosen: cpus("90", "5", "5"),
			check: func(p map[string]int32) bool { return p["A"] == 9 && p["B"]+p["C"] == 1 }},
		{name: "nothing available: even", unit: wl(9), chosen: cpus("0", "0", "0"), want: m("A=3", "B=3", "C=3")},
		{name: "no resources reported: even", unit: wl(9), chosen: abc(), want: m("A=3", "B=3", "C=3")},
		// A capped at 3; 7 by .3:.2 = 4.2 2.8: 4 2, then C.
		{name: "maxReplicas applies; listed weights do not, unlisted clusters take part",
			unit: wl(10, capPercent(200), weights(wMax("A", 1, 3))), chosen: cpus("50", "30", "20"), want: m("A=3", "B=4", "C=3")},
		// λ: .5λ + .3λ + 5 = 10, λ = 6.25: 3.125 1.875 5: 3 1 5, then B.
		{name: "minReplicas applies", unit: wl(10, capPercent(200), weights(wMin("C", 1, 5))), chosen: cpus("50", "30", "20"), want: m("A=3", "B=2", "C=5")},
		{name: "what the weighted clusters cannot hold goes to the full one",
			unit: wl(10, weights(wMax("B", 1, 2), wMax("C", 1, 2))), chosen: cpus("0", "50", "50"), want: m("A=6", "B=2", "C=2")},
		// A runs 40 one-core replicas, so 10 + 40 of its 100 cores are
		// the workload's: rooms 50/50, even. Counting only the 10 free
		// cores would give about 8/32.
		{name: "the workload's own replicas count as available",
			unit: wl(40, current("A=40"), avoid(false)), chosen: ranked(mc("A", cpu("100", "10")), mc("B", cpu("100", "50"))), want: m("A=20", "B=20")},
		{name: "own replicas never make more than allocatable available",
			unit: wl(40, current("A=40"), avoid(false), capPercent(1000)), chosen: ranked(mc("A", cpu("100", "90")), mc("B", cpu("100", "100"))), want: m("A=20", "B=20")},
		{name: "memory when no cpu is requested",
			unit: divide(9, mode(v1alpha1.WeightWaterLevel), requests("memory", "1Gi")),
			chosen: ranked(
				mc("A", cpu("100", "90"), room(corev1.ResourceMemory, "100Gi", "30Gi")),
				mc("B", cpu("100", "5"), room(corev1.ResourceMemory, "100Gi", "30Gi")),
				mc("C", cpu("100", "5"), room(corev1.ResourceMemory, "100Gi", "30Gi"))),
			want: m("A=3", "B=3", "C=3")},
		{name: "cpu when requested, memory ignored",
			unit: divide(10, mode(v1alpha1.WeightWaterLevel), requests("memory", "1Gi", "cpu", "500m")),
			chosen: ranked(
				mc("A", cpu("100", "90"), room(corev1.ResourceMemory, "100Gi", "30Gi")),
				mc("B", cpu("100", "5"), room(corev1.ResourceMemory, "100Gi", "30Gi")),
				mc("C", cpu("100", "5"), room(corev1.ResourceMemory, "100Gi", "30Gi"))),
			want: m("A=8", "B=1", "C=1")},
		// .75/.25, capped at .7: .7/.95 = .737, .263: 5.9 2.1: 5 2, then A.
		{name: "pods without requests",
			unit:   divide(8, mode(v1alpha1.WeightWaterLevel)),
			chosen: ranked(mc("A", room(corev1.ResourcePods, "100", "60")), mc("B", room(corev1.ResourcePods, "100", "20"))), want: m("A=6", "B=2")},
		{name: "avoidDisruption applies: same total keeps the current split",
			unit: wl(10, current("A=2", "B=4", "C=4")), chosen: cpus("90", "5", "5"), want: m("A=2", "B=4", "C=4")},
		{name: "avoidDisruption applies: a scale-up grows the roomy cluster",
			unit: wl(20, current("A=2", "B=4", "C=4")), chosen: cpus("90", "5", "5"), want: m("A=12", "B=4", "C=4")},
	})
}

func TestBinpack(t *testing.T) {
	bp := func(total int32, opts ...unitOpt) *framework.Unit {
		return divide(total, append([]unitOpt{mode(v1alpha1.WeightBinpack), requests("cpu", "2")}, opts...)...)
	}
	xyz := func(x, y, z string) []framework.ScoredCluster {
		return ranked(mc("X", cpu("100", x)), mc("Y", cpu("100", y)), mc("Z", cpu("100", z)))
	}
	runCases(t, []planCase{
		// Fits 5, 3, 50 two-core replicas.
		{name: "best first, each up to what fits", unit: bp(7), chosen: xyz("10", "6", "100"), want: m("X=5", "Y=2")},
		{name: "the ranking decides", unit: bp(7), chosen: ranked(mc("Y", cpu("100", "6")), mc("X", cpu("100", "10"))), want: m("Y=3", "X=4")},
		{name: "fractions of a replica do not fit", unit: bp(7), chosen: xyz("11.9", "7", "100"), want: m("X=5", "Y=2")},
		{name: "spills down the ranking", unit: bp(55), chosen: xyz("10", "6", "100"), want: m("X=5", "Y=3", "Z=47")},
		// 5 + 3 fit; 4 more spread evenly: 1 each and one more somewhere.
		{name: "what fits nowhere is spread evenly", unit: bp(12), chosen: xyz("10", "6", "0"), check: func(p map[string]int32) bool {
			ex, ey, ez := p["X"]-5, p["Y"]-3, p["Z"]
			return ex+ey+ez == 4 && min(ex, ey, ez) == 1 && max(ex, ey, ez) == 2
		}},
		{name: "maxReplicas caps a cluster", unit: bp(7, weights(wMax("X", 1, 2))), chosen: xyz("10", "6", "100"), want: m("X=2", "Y=3", "Z=2")},
		{name: "minReplicas first", unit: bp(7, weights(wMin("Z", 1, 1))), chosen: xyz("10", "6", "100"), want: m("X=5", "Y=1", "Z=1")},
		{name: "minimums above the total go best first", unit: bp(4, weights(wMin("X", 1, 3), wMin("Y", 1, 3))), chosen: xyz("10", "6", "100"), want: m("X=3", "Y=1")},
		{name: "overflow respects maxReplicas", unit: bp(4, weights(wMax("X", 1, 1))), chosen: ranked(mc("X"), mc("Y")), want: m("X=1", "Y=3")},
		{name: "pods when nothing is requested", unit: divide(5, mode(v1alpha1.WeightBinpack)),
			chosen: ranked(mc("X", room(corev1.ResourcePods, "110", "3")), mc("Y", room(corev1.ResourcePods, "110", "100"))), want: m("X=3", "Y=2")},
		// X's 5 replicas use all it has; they still fit there.
		{name: "own replicas fit where they run", unit: bp(7, current("X=5"), avoid(false)), chosen: xyz("0", "100", "100"), want: m("X=5", "Y=2")},
		{name: "a NoSchedule cluster is not filled",
			unit: bp(7, current("X=1")), chosen: ranked(mc("X", cpu("100", "100"), taint("t", corev1.TaintEffectNoSchedule)), mc("Y", cpu("100", "100"))), want: m("X=1", "Y=6")},
		{name: "total 0", unit: bp(0), chosen: xyz("10", "6", "100"), want: m("X=0", "Y=0", "Z=0")},
	})
}
