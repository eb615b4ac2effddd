package replicas

import (
	"context"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// fits gives clusters simulated room ("A=3" terms: A's nodes hold 3).
func fits(terms ...string) unitOpt {
	return func(u *framework.Unit) {
		u.Fits = map[string]framework.Fit{}
		for name, n := range m(terms...) {
			u.Fits[name] = framework.Fit{Replicas: int64(n)}
		}
	}
}

func elastic(c *v1alpha1.MemberCluster) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[v1alpha1.LabelElastic] = "true"
}

func TestSimulatedFits(t *testing.T) {
	// The sums say every cluster has 100 free cores; the nodes say less.
	roomy := func() []framework.ScoredCluster { return cpus("100", "100", "100") }
	bp := func(total int32, opts ...unitOpt) *framework.Unit {
		return divide(total, append([]unitOpt{mode(v1alpha1.WeightBinpack), requests("cpu", "4")}, opts...)...)
	}
	wl := func(total int32, opts ...unitOpt) *framework.Unit {
		return divide(total, append([]unitOpt{mode(v1alpha1.WeightWaterLevel), requests("cpu", "4")}, opts...)...)
	}
	runCases(t, []planCase{
		{name: "binpack fills by what the nodes hold, not the sums", unit: bp(10, fits("A=3", "B=5", "C=10")), chosen: roomy(), want: m("A=3", "B=5", "C=2")},
		{name: "water level weighs by what the nodes hold", unit: wl(10, fits("A=0", "B=10", "C=10")), chosen: roomy(), want: m("B=5", "C=5")},
		// 20 asked, 6 fit: the 14 that fit nowhere gather in one cluster,
		// the best ranked when none is elastic or runs the object.
		{name: "unplaceable replicas gather in the best-ranked cluster", unit: bp(20, fits("A=3", "B=3", "C=0")), chosen: roomy(), want: m("A=17", "B=3")},
		{name: "an elastic cluster takes them", unit: bp(20, fits("A=3", "B=3", "C=0")),
			chosen: ranked(mc("A", cpu("100", "100")), mc("B", cpu("100", "100")), mc("C", cpu("100", "100"), elastic)), want: m("A=3", "B=3", "C=14")},
		{name: "else the cluster running most of the object", unit: bp(20, fits("A=3", "B=5", "C=0"), current("A=3", "B=5", "C=4"), avoid(false)), chosen: roomy(),
			want: m("A=3", "B=17")},
		{name: "water level gathers too", unit: wl(12, fits("A=2", "B=2", "C=2")), chosen: roomy(), want: m("A=8", "B=2", "C=2")},
		{name: "gathering respects maxReplicas", unit: bp(20, fits("A=3", "B=3", "C=0"), weights(wMax("A", 1, 5))), chosen: roomy(),
			check: func(p map[string]int32) bool { return p["A"] == 5 && p["B"]+p["C"] == 15 && p["B"] >= 3 }},
		{name: "minReplicas stand beyond the room", unit: bp(10, fits("A=3", "B=10", "C=10"), weights(wMin("A", 1, 5), w("B", 1), w("C", 1))), chosen: roomy(),
			want: m("A=5", "B=5")},
		// A cluster without a node-level view (a pull member) is judged by
		// its sums; the simulated ones by their nodes.
		{name: "clusters without a view use the sums", unit: bp(10, fits("A=2")), chosen: cpus("100", "8", "0"), want: m("A=8", "B=2")},
		{name: "an even split stays even where it fits", unit: divide(9, requests("cpu", "4"), fits("A=10", "B=10", "C=10")), chosen: roomy(), want: m("A=3", "B=3", "C=3")},
		{name: "an even split is capped by the nodes' room", unit: divide(9, requests("cpu", "4"), fits("A=1", "B=10", "C=10")), chosen: roomy(), want: m("A=1", "B=4", "C=4")},
		{name: "an even split nobody holds gathers", unit: divide(6, requests("cpu", "4"), fits("A=0", "B=0", "C=0")), chosen: roomy(), want: m("A=6")},
		{name: "listed static weights ignore room", unit: divide(6, requests("cpu", "4"), fits("A=0", "B=0", "C=0"), weights(w("A", 1), w("B", 1), w("C", 1))),
			chosen: roomy(), want: m("A=2", "B=2", "C=2")},
	})
}

func budget(nodes int32, b string) opt {
	return func(c *v1alpha1.MemberCluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[v1alpha1.LabelNodeBudget] = b
		c.Status.NodeCount = nodes
	}
}

func TestGatherRespectsNodeBudgets(t *testing.T) {
	bp := divide(20, mode(v1alpha1.WeightBinpack), requests("cpu", "4"), fits("A=3", "B=3", "C=0"))
	runCases(t, []planCase{
		{name: "a member at its node budget is not elastic", unit: bp,
			chosen: ranked(mc("A", cpu("100", "100")), mc("B", cpu("100", "100"), elastic, budget(10, "10")), mc("C", cpu("100", "100"))),
			want:   m("A=17", "B=3")},
		{name: "the most node headroom first", unit: bp,
			chosen: ranked(mc("A", cpu("100", "100"), budget(10, "12")), mc("B", cpu("100", "100"), budget(10, "50")), mc("C", cpu("100", "100"), elastic, budget(10, "11"))),
			want:   m("A=3", "B=17")},
	})
}

func TestNodeEstimatesOff(t *testing.T) {
	p, err := New([]byte(`{"nodeEstimates": false}`))
	if err != nil {
		t.Fatal(err)
	}
	u := divide(10, mode(v1alpha1.WeightBinpack), requests("cpu", "4"), fits("A=1", "B=1", "C=1"))
	// The sums: A 40 cores free (10 replicas), B and C none.
	placement, st := p.(framework.ReplicasPlugin).Replicas(context.Background(), framework.CycleState{}, u, cpus("40", "0", "0"))
	if !st.IsSuccess() || len(placement) != 1 || placement[0].Cluster != "A" || *placement[0].Replicas != 10 {
		t.Errorf("with nodeEstimates false, Binpack by the sums: %v %+v, want A=10", placement, st)
	}
}
