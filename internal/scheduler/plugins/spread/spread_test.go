package spread

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ranked builds best-first clusters from "name", "name:region" or
// "name:region:zone" (an empty region leaves the label off).
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
			c.Labels["zone"] = parts[2]
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
	two, one := ptr.To[int32](2), ptr.To[int32](1)
	tests := []struct {
		name        string
		constraints []v1alpha1.SpreadConstraint
		ranked      []framework.ScoredCluster
		want        []string
		reason      string
	}{
		{name: "no constraints keeps all, unlabelled too",
			ranked: ranked("a", "b:eu"), want: []string{"a", "b"}},
		{name: "unlabelled clusters are dropped",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, nil)},
			ranked:      ranked("a", "b:eu", "c:us"), want: []string{"b", "c"}},
		{name: "maxGroups keeps every cluster of the best groups",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, two)},
			ranked:      ranked("eu1:eu", "us1:us", "eu2:eu", "ap1:ap", "us2:us"), want: []string{"eu1", "us1", "eu2", "us2"}},
		{name: "groups are ordered by their best cluster",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, one)},
			ranked:      ranked("x", "us1:us", "eu1:eu", "us2:us"), want: []string{"us1", "us2"}},
		{name: "minGroups met",
			constraints: []v1alpha1.SpreadConstraint{sc("region", two, nil)},
			ranked:      ranked("eu1:eu", "us1:us"), want: []string{"eu1", "us1"}},
		{name: "minGroups not met",
			constraints: []v1alpha1.SpreadConstraint{sc("topology.kubernetes.io/region", two, nil)},
			ranked:      ranked("eu1", "eu2"), reason: "spread over topology.kubernetes.io/region needs 2 groups, 0 available (2 clusters without the label)"},
		{name: "minGroups not met, all labelled",
			constraints: []v1alpha1.SpreadConstraint{sc("region", two, nil)},
			ranked:      ranked("eu1:eu", "eu2:eu"), reason: "spread over region needs 2 groups, 1 available"},
		{name: "no labelled cluster at all",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, nil)},
			ranked:      ranked("a"), reason: "spread over region needs 1 group, 0 available (1 cluster without the label)"},
		{name: "constraints apply in order: region first, then zone over what is left",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, one), sc("zone", two, nil)},
			ranked:      ranked("eu1:eu:a", "us1:us:c", "eu2:eu:a", "eu3:eu:b"), want: []string{"eu1", "eu2", "eu3"}},
		{name: "a later constraint can fail after an earlier one narrowed",
			constraints: []v1alpha1.SpreadConstraint{sc("region", nil, one), sc("zone", two, nil)},
			ranked:      ranked("eu1:eu:a", "us1:us:c", "eu2:eu:a"), reason: "spread over zone needs 2 groups, 1 available"},
		{name: "minGroups above maxGroups",
			constraints: []v1alpha1.SpreadConstraint{sc("region", two, one)},
			ranked:      ranked("eu1:eu", "us1:us"), reason: "spread over region: minGroups 2 exceeds maxGroups 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &framework.Unit{Key: "ns/web", Placement: &v1alpha1.Placement{SpreadConstraints: tt.constraints}}
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
		{`{"groups": 3}`, `Spread: takes no arguments, got "groups"`},
		{`[1]`, "Spread: arguments must be a JSON object"},
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
