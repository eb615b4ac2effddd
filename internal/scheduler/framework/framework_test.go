package framework

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// fake is a plugin at every point: it excludes the clusters named in
// reject, scores by name length, keeps the first keep ranked clusters and
// places every chosen cluster.
type fake struct {
	name   string
	reject map[string]string
	keep   int
	points *[4]bool
}

func (f *fake) Name() string { return f.name }
func (f *fake) Filter(_ context.Context, _ CycleState, _ *Unit, c *v1alpha1.MemberCluster) *Status {
	if r, ok := f.reject[c.Name]; ok {
		return NewUnschedulable("%s", r)
	}
	return nil
}
func (f *fake) Score(_ context.Context, _ CycleState, _ *Unit, c *v1alpha1.MemberCluster) (int64, *Status) {
	return int64(len(c.Name)), nil
}
func (f *fake) Select(_ context.Context, _ CycleState, _ *Unit, ranked []ScoredCluster) ([]ScoredCluster, *Status) {
	if f.keep > 0 && len(ranked) > f.keep {
		return ranked[:f.keep], nil
	}
	return ranked, nil
}
func (f *fake) Replicas(_ context.Context, _ CycleState, _ *Unit, chosen []ScoredCluster) ([]v1alpha1.ClusterPlacement, *Status) {
	out := make([]v1alpha1.ClusterPlacement, len(chosen))
	for i, c := range chosen {
		out[i] = v1alpha1.ClusterPlacement{Cluster: c.Cluster.Name}
	}
	return out, nil
}

// pointsFake serves only the points it is told.
type pointsFake struct{ fake }

func (p *pointsFake) Points() (bool, bool, bool, bool) {
	return p.points[0], p.points[1], p.points[2], p.points[3]
}

func clusters(names ...string) []*v1alpha1.MemberCluster {
	out := make([]*v1alpha1.MemberCluster, len(names))
	for i, n := range names {
		out[i] = &v1alpha1.MemberCluster{}
		out[i].Name = n
	}
	return out
}

func TestBuildAndSchedule(t *testing.T) {
	reg := Registry{
		"rejectA": func([]byte) (Plugin, error) {
			return &fake{name: "rejectA", reject: map[string]string{"a": "is a"}}, nil
		},
		"rejectBC": func([]byte) (Plugin, error) {
			return &fake{name: "rejectBC", reject: map[string]string{"bb": "too short", "cc": "too short"}}, nil
		},
		"keep": func(args []byte) (Plugin, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return &fake{name: "keep", keep: a.N}, nil
		},
		"all": func([]byte) (Plugin, error) { return &fake{name: "all"}, nil },
		"filter-only": func([]byte) (Plugin, error) {
			return &pointsFake{fake{name: "filter-only", points: &[4]bool{true}}}, nil
		},
	}
	defaults := Defaults{Filter: []string{"rejectA", "rejectBC"}, Score: []string{"all"}, Replicas: "all"}
	u := &Unit{Key: "ns/x", Placement: &v1alpha1.Placement{}}
	cs := clusters("a", "bb", "cc", "dddd", "eee")
	tests := []struct {
		name     string
		spec     *v1alpha1.SchedulingProfileSpec
		want     string
		msg      string
		buildErr string
	}{
		{name: "defaults", want: "dddd eee", msg: "2/5 clusters; excluded: 2 too short, 1 is a"},
		{name: "disable one default", spec: &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
			Filter: v1alpha1.PluginSet{Disabled: []v1alpha1.PluginRef{{Name: "rejectBC"}}}}},
			want: "bb cc dddd eee", msg: "4/5 clusters; excluded: 1 is a"},
		{name: "* clears the defaults", spec: &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
			Filter: v1alpha1.PluginSet{Disabled: []v1alpha1.PluginRef{{Name: "*"}}}}},
			want: "a bb cc dddd eee", msg: "5/5 clusters"},
		{name: "select with args keeps the best scored", spec: &v1alpha1.SchedulingProfileSpec{
			Plugins:      v1alpha1.ProfilePlugins{Select: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "keep"}}}},
			PluginConfig: []v1alpha1.PluginConfig{{Name: "keep", Args: jsonArgs(`{"N":1}`)}}},
			want: "dddd", msg: "1/5 clusters; excluded: 2 too short, 1 is a"},
		{name: "unknown plugin", spec: &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
			Filter: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "nope"}}}}}, buildErr: `plugin nope: unknown plugin "nope"`},
		{name: "args for an unused plugin", spec: &v1alpha1.SchedulingProfileSpec{
			PluginConfig: []v1alpha1.PluginConfig{{Name: "keep", Args: jsonArgs(`{}`)}}}, buildErr: "pluginConfig for keep, which the profile does not use"},
		{name: "a plugin at a point it does not serve", spec: &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
			Score: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "filter-only"}}}}}, buildErr: "plugin filter-only has no score extension point"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build("p", tt.spec, reg, defaults, nil)
			if tt.buildErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.buildErr) {
					t.Fatalf("Build error = %v, want %q", err, tt.buildErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Schedule(context.Background(), u, cs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pl := range res.Placement {
				got = append(got, pl.Cluster)
			}
			if g := strings.Join(got, " "); g != tt.want || res.Message != tt.msg {
				t.Errorf("placement %q, message %q; want %q, %q", g, res.Message, tt.want, tt.msg)
			}
		})
	}
}

func TestNothingFitsExplains(t *testing.T) {
	reg := Registry{"r": func([]byte) (Plugin, error) {
		return &fake{name: "r", reject: map[string]string{"a": "untolerated taint x", "b": "untolerated taint x", "c": "do not serve v1 Thing"}}, nil
	}}
	p, err := Build("", nil, reg, Defaults{Filter: []string{"r"}, Replicas: "r"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Schedule(context.Background(), &Unit{Key: "k", Replicas: ptr.To[int32](3), Placement: &v1alpha1.Placement{}}, clusters("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0/3 clusters available: 2 untolerated taint x, 1 do not serve v1 Thing"; res.Message != want || len(res.Placement) != 0 {
		t.Errorf("message %q placement %v, want %q and none", res.Message, res.Placement, want)
	}
}

func jsonArgs(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }
