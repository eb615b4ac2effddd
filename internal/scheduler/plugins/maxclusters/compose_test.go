package maxclusters_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/maxclusters"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/spread"
)

// TestSpreadThenMaxClusters runs the default select order: Spread narrows
// to two regions, then MaxClusters keeps one cluster of each instead of the
// two best (both in eu).
func TestSpreadThenMaxClusters(t *testing.T) {
	var ranked []framework.ScoredCluster
	for i, s := range [][2]string{{"eu1", "eu"}, {"eu2", "eu"}, {"nolabel", ""}, {"us1", "us"}, {"ap1", "ap"}} {
		c := &v1alpha1.MemberCluster{}
		c.Name = s[0]
		if s[1] != "" {
			c.Labels = map[string]string{"region": s[1]}
		}
		ranked = append(ranked, framework.ScoredCluster{Cluster: c, Score: int64(100 - i)})
	}
	u := &framework.Unit{Key: "ns/web", Placement: &v1alpha1.Placement{
		MaxClusters:       ptr.To[int32](2),
		SpreadConstraints: []v1alpha1.SpreadConstraint{{TopologyKey: "region", MinGroups: ptr.To[int32](2), MaxGroups: ptr.To[int32](2)}},
	}}
	chosen := ranked
	for _, f := range []framework.Factory{spread.New, maxclusters.New} {
		p, err := f(nil)
		if err != nil {
			t.Fatal(err)
		}
		var st *framework.Status
		if chosen, st = p.(framework.SelectPlugin).Select(context.Background(), framework.CycleState{}, u, chosen); !st.IsSuccess() {
			t.Fatalf("%s: %+v", p.Name(), st)
		}
	}
	var got []string
	for _, c := range chosen {
		got = append(got, c.Cluster.Name)
	}
	if want := []string{"eu1", "us1"}; !slices.Equal(got, want) {
		t.Errorf("chosen %v, want %v", got, want)
	}
}
