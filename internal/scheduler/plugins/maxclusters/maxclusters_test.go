package maxclusters

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ranked builds best-first clusters from "name" or "name:region" (and
// "name:region:provider").
func ranked(specs ...string) []framework.ScoredCluster {
	out := make([]framework.ScoredCluster, len(specs))
	for i, s := range specs {
		parts := strings.Split(s, ":")
		c := &v1alpha1.MemberCluster{}
		c.Name = parts[0]
		c.Labels = map[string]string{}
		if len(parts) > 1 && parts[1] != "" {
			c.Labels["region"] = parts[1]
		}
		if len(parts) > 2 {
			c.Labels["provider"] = parts[2]
		}
		out[i] = framework.ScoredCluster{Cluster: c, Score: int64(100 - i)}
	}
	return out
}

func names(cs []framework.ScoredCluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Cluster.Name
	}
	return out
}

func sc(key string, minG, maxG *int32) v1alpha1.SpreadConstraint {
	return v1alpha1.SpreadConstraint{TopologyKey: key, MinGroups: minG, MaxGroups: maxG}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name        string
		max         *int32
		constraints []v1alpha1.SpreadConstraint
		ranked      []framework.ScoredCluster
		want        []string
		reason      string
	}{
		{name: "unset keeps all", ranked: ranked("a", "b", "c"), want: []string{"a", "b", "c"}},
		{name: "top N", max: ptr.To[int32](2), ranked: ranked("a", "b", "c"), want: []string{"a", "b"}},
		{name: "N above the count keeps all", max: ptr.To[int32](5), ranked: ranked("a", "b"), want: []string{"a", "b"}},
		{name: "zero allows nothing", max: ptr.To[int32](0), ranked: ranked("a"), reason: "maxClusters 0 allows no cluster"},
		{name: "spread: best of each group first, in rank order",
			max: ptr.To[int32](2), constraints: []v1alpha1.SpreadConstraint{sc("region", ptr.To[int32](2), nil)},
			ranked: ranked("eu1:eu", "eu2:eu", "us1:us"), want: []string{"eu1", "us1"}},
		{name: "spread without minGroups still covers further groups",
			max: ptr.To[int32](3), constraints: []v1alpha1.SpreadConstraint{sc("region", nil, nil)},
			ranked: ranked("eu1:eu", "eu2:eu", "eu3:eu", "us1:us", "ap1:ap"), want: []string{"eu1", "us1", "ap1"}},
		{name: "maxGroups bounds the further groups, the rest by rank",
			max: ptr.To[int32](3), constraints: []v1alpha1.SpreadConstraint{sc("region", nil, ptr.To[int32](2))},
			ranked: ranked("eu1:eu", "eu2:eu", "us1:us", "ap1:ap"), want: []string{"eu1", "eu2", "us1"}},
		{name: "unlabelled clusters open no group but fill by rank",
			max: ptr.To[int32](3), constraints: []v1alpha1.SpreadConstraint{sc("region", ptr.To[int32](2), nil)},
			ranked: ranked("x", "eu1:eu", "eu2:eu", "us1:us"), want: []string{"x", "eu1", "us1"}},
		{name: "second constraint gets its minimum before further groups of the first",
			max: ptr.To[int32](3), constraints: []v1alpha1.SpreadConstraint{sc("region", ptr.To[int32](2), nil), sc("provider", ptr.To[int32](2), nil)},
			ranked: ranked("a:eu:aws", "b:us:aws", "c:ap:aws", "d:eu:gcp"), want: []string{"a", "b", "d"}},
		{name: "too few clusters for minGroups",
			max: ptr.To[int32](1), constraints: []v1alpha1.SpreadConstraint{sc("region", ptr.To[int32](2), nil)},
			ranked: ranked("eu1:eu", "us1:us"), reason: "maxClusters 1 covers 1 group of region, spread needs 2"},
		{name: "too few groups is Spread's to report, not ours",
			max: ptr.To[int32](1), constraints: []v1alpha1.SpreadConstraint{sc("region", ptr.To[int32](2), nil)},
			ranked: ranked("eu1:eu", "eu2:eu"), want: []string{"eu1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &framework.Unit{Key: "ns/web", Placement: &v1alpha1.Placement{MaxClusters: tt.max, SpreadConstraints: tt.constraints}}
			p, err := New(nil)
			if err != nil {
				t.Fatal(err)
			}
			got, st := p.(framework.SelectPlugin).Select(context.Background(), framework.CycleState{}, u, tt.ranked)
			if tt.reason != "" {
				if st.IsSuccess() || st.Code != framework.Unschedulable || st.Reason != tt.reason {
					t.Fatalf("status %+v, want Unschedulable %q", st, tt.reason)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("status %+v", st)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("got %v, want %v", names(got), tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		args string
		err  string
	}{
		{"", ""},
		{"null", ""},
		{" {} ", ""},
		{`{"max": 3}`, `MaxClusters: takes no arguments, got "max"`},
		{`[1]`, "MaxClusters: arguments must be a JSON object"},
	}
	for _, tt := range tests {
		p, err := New([]byte(tt.args))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("New(%q): %v", tt.args, err)
		case tt.err == "" && p.Name() != Name:
			t.Errorf("New(%q).Name() = %q", tt.args, p.Name())
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("New(%q) = %v, want error %q", tt.args, err, tt.err)
		}
	}
}
