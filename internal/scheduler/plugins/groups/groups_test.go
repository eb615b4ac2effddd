package groups

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// cluster is "name/dc/cost/elastic" with room for replicas (simulated).
type cluster struct {
	name, dc, cost string
	elastic        bool
	room           int64
}

func TestSelect(t *testing.T) {
	dcs := []cluster{
		{"a1", "dc-a", "5", false, 4}, {"a2", "dc-a", "5", false, 4},
		{"b1", "dc-b", "2", false, 3},
		{"c1", "dc-c", "9", true, 0},
		{"x", "", "", false, 100}, // no label: never chosen
	}
	tests := []struct {
		name      string
		clusters  []cluster
		replicas  int32
		divide    bool
		current   []string
		maxGroups *int32
		want      []string // chosen clusters, in ranked order
		note      string
		reason    string
	}{
		{name: "the cheapest group holds them", clusters: dcs, replicas: 3, divide: true, want: []string{"b1"}, note: "dc-b (cost 2, room 3) of 3"},
		{name: "cheapest first, then the next cheapest", clusters: dcs, replicas: 7, divide: true, want: []string{"a1", "a2", "b1"}},
		{name: "more than all hold: the elastic group is added", clusters: dcs, replicas: 20, divide: true, want: []string{"a1", "a2", "b1", "c1"}},
		{name: "maxGroups caps", clusters: dcs, replicas: 20, divide: true, maxGroups: ptr.To[int32](1), want: []string{"b1"}},
		{name: "running groups stay although dearer", clusters: dcs, replicas: 3, divide: true, current: []string{"a2"}, want: []string{"a1", "a2"}},
		{name: "not divided: one group", clusters: dcs, replicas: 50, want: []string{"b1"}},
		{name: "running groups stay beyond maxGroups", clusters: dcs, replicas: 3, divide: true, current: []string{"a1", "c1"}, maxGroups: ptr.To[int32](1),
			want: []string{"a1", "a2", "c1"}},
		{name: "no replicas: nothing to choose", clusters: dcs, replicas: 0, divide: true, want: []string{"a1", "a2", "b1", "c1", "x"}},
		{name: "no room, only growth", clusters: []cluster{{"b1", "dc-b", "1", false, 0}, {"c1", "dc-c", "9", true, 0}}, replicas: 5, divide: true, want: []string{"c1"}},
		{name: "nothing has room or grows", clusters: []cluster{{"b1", "dc-b", "1", false, 0}}, replicas: 5, divide: true,
			reason: "no group of dc has room for a replica or can grow"},
		{name: "nothing labelled", clusters: []cluster{{"x", "", "", false, 1}}, replicas: 1, divide: true, reason: "no feasible cluster has the label dc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &framework.Unit{Key: "ns/w", Replicas: ptr.To(tt.replicas), Fits: map[string]framework.Fit{},
				Placement: &v1alpha1.Placement{Groups: &v1alpha1.GroupPlacement{TopologyKey: "dc", MaxGroups: tt.maxGroups}}}
			if tt.divide {
				u.Placement.ReplicaScheduling.Type = v1alpha1.ReplicaSchedulingDivide
			}
			for _, c := range tt.current {
				u.Current = append(u.Current, v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To[int32](1)})
			}
			var ranked []framework.ScoredCluster
			for _, c := range tt.clusters {
				mc := &v1alpha1.MemberCluster{}
				mc.Name = c.name
				mc.Labels = map[string]string{}
				if c.dc != "" {
					mc.Labels["dc"] = c.dc
				}
				if c.cost != "" {
					mc.Labels[v1alpha1.LabelCost] = c.cost
				}
				if c.elastic {
					mc.Labels[v1alpha1.LabelElastic] = "true"
				}
				u.Fits[c.name] = framework.Fit{Replicas: c.room}
				ranked = append(ranked, framework.ScoredCluster{Cluster: mc})
			}
			state := framework.CycleState{}
			out, st := (&Plugin{}).Select(context.Background(), state, u, ranked)
			if tt.reason != "" {
				if st.IsSuccess() || st.Reason != tt.reason {
					t.Fatalf("status %+v, want Unschedulable %q", st, tt.reason)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("status %+v", st)
			}
			var got []string
			for _, c := range out {
				got = append(got, c.Cluster.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("chosen %v, want %v", got, tt.want)
			}
			if notes, _ := state["framework/notes"].([]string); tt.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], tt.note)) {
				t.Errorf("notes %q, want one saying %q", notes, tt.note)
			}
		})
	}
}

func TestNoGroupsNoChange(t *testing.T) {
	ranked := []framework.ScoredCluster{{Cluster: &v1alpha1.MemberCluster{}}}
	out, st := (&Plugin{}).Select(context.Background(), framework.CycleState{}, &framework.Unit{Placement: &v1alpha1.Placement{}}, ranked)
	if !st.IsSuccess() || len(out) != 1 {
		t.Errorf("without placement.groups: %d clusters, %+v", len(out), st)
	}
}
