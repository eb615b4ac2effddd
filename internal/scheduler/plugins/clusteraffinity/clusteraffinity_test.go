package clusteraffinity

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func expr(key string, op v1alpha1.ClusterSelectorOperator, values ...string) v1alpha1.ClusterSelectorRequirement {
	return v1alpha1.ClusterSelectorRequirement{Key: key, Operator: op, Values: values}
}

func selTerm(exprs ...v1alpha1.ClusterSelectorRequirement) v1alpha1.ClusterSelectorTerm {
	return v1alpha1.ClusterSelectorTerm{MatchExpressions: exprs}
}

func unit(a *v1alpha1.ClusterAffinity) *framework.Unit {
	return &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{ClusterAffinity: a}}
}

func cluster(labels map[string]string) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name, c.Labels = "member-1", labels
	return c
}

const region, tier = "topology.kubernetes.io/region", "example.com/tier"

func TestFilter(t *testing.T) {
	eu := map[string]string{region: "eu-west-1", tier: "3"}
	us := map[string]string{region: "us-east-1", tier: "gold"}
	tests := []struct {
		name     string
		affinity *v1alpha1.ClusterAffinity
		labels   map[string]string
		pass     bool
	}{
		{name: "no affinity", labels: eu, pass: true},
		{name: "no required terms", affinity: &v1alpha1.ClusterAffinity{Preferred: []v1alpha1.PreferredClusterTerm{{Weight: 1, Term: selTerm(expr(region, "In", "x"))}}}, labels: eu, pass: true},
		{name: "In matches", affinity: required(selTerm(expr(region, "In", "us-east-1", "eu-west-1"))), labels: eu, pass: true},
		{name: "In misses", affinity: required(selTerm(expr(region, "In", "us-east-1"))), labels: eu},
		{name: "In without the label", affinity: required(selTerm(expr("zone", "In", "a"))), labels: eu},
		{name: "NotIn holds", affinity: required(selTerm(expr(region, "NotIn", "us-east-1"))), labels: eu, pass: true},
		{name: "NotIn fails", affinity: required(selTerm(expr(region, "NotIn", "eu-west-1"))), labels: eu},
		{name: "NotIn without the label", affinity: required(selTerm(expr("zone", "NotIn", "a"))), labels: eu, pass: true},
		{name: "Exists", affinity: required(selTerm(expr(region, "Exists"))), labels: eu, pass: true},
		{name: "Exists without the label", affinity: required(selTerm(expr("zone", "Exists"))), labels: eu},
		{name: "DoesNotExist", affinity: required(selTerm(expr("zone", "DoesNotExist"))), labels: eu, pass: true},
		{name: "DoesNotExist with the label", affinity: required(selTerm(expr(region, "DoesNotExist"))), labels: eu},
		{name: "Gt holds", affinity: required(selTerm(expr(tier, "Gt", "2"))), labels: eu, pass: true},
		{name: "Gt equal fails", affinity: required(selTerm(expr(tier, "Gt", "3"))), labels: eu},
		{name: "Gt negative bound", affinity: required(selTerm(expr(tier, "Gt", "-1"))), labels: eu, pass: true},
		{name: "Gt non-integer label", affinity: required(selTerm(expr(tier, "Gt", "0"))), labels: us},
		{name: "Gt without the label", affinity: required(selTerm(expr("zone", "Gt", "0"))), labels: eu},
		{name: "Lt holds", affinity: required(selTerm(expr(tier, "Lt", "4"))), labels: eu, pass: true},
		{name: "Lt fails", affinity: required(selTerm(expr(tier, "Lt", "3"))), labels: eu},
		{name: "Lt non-integer label", affinity: required(selTerm(expr(tier, "Lt", "100"))), labels: us},
		{name: "all expressions of a term", affinity: required(selTerm(expr(region, "Exists"), expr(tier, "Gt", "5"))), labels: eu},
		{name: "any term", affinity: required(selTerm(expr(region, "In", "us-east-1")), selTerm(expr(tier, "Lt", "5"))), labels: eu, pass: true},
		{name: "no term matches", affinity: required(selTerm(expr(region, "In", "us-east-1")), selTerm(expr(tier, "Gt", "5"))), labels: eu},
		{name: "empty term matches all", affinity: required(selTerm()), labels: nil, pass: true},
		{name: "cluster without labels", affinity: required(selTerm(expr(region, "NotIn", "x"), expr(tier, "DoesNotExist"))), pass: true},
	}
	p := &ClusterAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, c := unit(tt.affinity), cluster(tt.labels)
			for _, prepared := range []bool{true, false} {
				state := framework.CycleState{}
				if prepared {
					if s := p.Prepare(context.Background(), state, u, nil); !s.IsSuccess() {
						t.Fatalf("Prepare: %s", s.Reason)
					}
				}
				s := p.Filter(context.Background(), state, u, c)
				switch {
				case tt.pass && !s.IsSuccess():
					t.Errorf("prepared=%v: excluded with %q", prepared, s.Reason)
				case !tt.pass && s.IsSuccess():
					t.Errorf("prepared=%v: passed", prepared)
				case !tt.pass && (s.Code != framework.Unschedulable || s.Reason != "do not match required cluster affinity"):
					t.Errorf("prepared=%v: got %d %q", prepared, s.Code, s.Reason)
				}
			}
		})
	}
}

func required(terms ...v1alpha1.ClusterSelectorTerm) *v1alpha1.ClusterAffinity {
	return &v1alpha1.ClusterAffinity{RequiredTerms: terms}
}

func preferred(weight int32, t v1alpha1.ClusterSelectorTerm) v1alpha1.PreferredClusterTerm {
	return v1alpha1.PreferredClusterTerm{Weight: weight, Term: t}
}

func TestScore(t *testing.T) {
	euGold := []v1alpha1.PreferredClusterTerm{
		preferred(60, selTerm(expr(region, "In", "eu-west-1"))),
		preferred(40, selTerm(expr(tier, "In", "gold"))),
	}
	thirds := []v1alpha1.PreferredClusterTerm{
		preferred(1, selTerm(expr(region, "Exists"))),
		preferred(2, selTerm(expr(tier, "Exists"))),
	}
	tests := []struct {
		name   string
		terms  []v1alpha1.PreferredClusterTerm
		labels map[string]string
		want   int64
	}{
		{name: "no preferred terms", labels: map[string]string{region: "eu-west-1"}, want: 0},
		{name: "both", terms: euGold, labels: map[string]string{region: "eu-west-1", tier: "gold"}, want: 100},
		{name: "first", terms: euGold, labels: map[string]string{region: "eu-west-1"}, want: 60},
		{name: "second", terms: euGold, labels: map[string]string{region: "us-east-1", tier: "gold"}, want: 40},
		{name: "none", terms: euGold, labels: map[string]string{region: "us-east-1"}, want: 0},
		{name: "a third, rounded down", terms: thirds, labels: map[string]string{region: "x"}, want: 33},
		{name: "two thirds, rounded down", terms: thirds, labels: map[string]string{tier: "x"}, want: 66},
	}
	p := &ClusterAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := unit(&v1alpha1.ClusterAffinity{Preferred: tt.terms})
			state := framework.CycleState{}
			if s := p.Prepare(context.Background(), state, u, nil); !s.IsSuccess() {
				t.Fatalf("Prepare: %s", s.Reason)
			}
			got, s := p.Score(context.Background(), state, u, cluster(tt.labels))
			if !s.IsSuccess() || got != tt.want {
				t.Errorf("Score = %d, %v; want %d", got, s, tt.want)
			}
		})
	}
}

func TestPrepareInvalid(t *testing.T) {
	tests := []struct {
		name     string
		affinity *v1alpha1.ClusterAffinity
		want     string
	}{
		{name: "unknown operator", affinity: required(selTerm(expr(region, "Like", "x"))),
			want: `clusterAffinity.requiredTerms[0].matchExpressions[0]: unknown operator "Like"`},
		{name: "In without values", affinity: required(selTerm(), selTerm(expr(region, "Exists"), expr(region, "In"))),
			want: "clusterAffinity.requiredTerms[1].matchExpressions[1]: In needs values"},
		{name: "Exists with values", affinity: required(selTerm(expr(region, "Exists", "x"))),
			want: "clusterAffinity.requiredTerms[0].matchExpressions[0]: Exists takes no values"},
		{name: "Gt non-integer", affinity: required(selTerm(expr(tier, "Gt", "gold"))),
			want: `clusterAffinity.requiredTerms[0].matchExpressions[0]: Gt takes one integer value, got ["gold"]`},
		{name: "Lt two values", affinity: required(selTerm(expr(tier, "Lt", "1", "2"))),
			want: `clusterAffinity.requiredTerms[0].matchExpressions[0]: Lt takes one integer value, got ["1" "2"]`},
		{name: "preferred weight 0", affinity: &v1alpha1.ClusterAffinity{Preferred: []v1alpha1.PreferredClusterTerm{preferred(0, selTerm())}},
			want: "clusterAffinity.preferred[0].weight: 0 is not within 1 to 100"},
		{name: "preferred bad term", affinity: &v1alpha1.ClusterAffinity{Preferred: []v1alpha1.PreferredClusterTerm{preferred(5, selTerm(expr(tier, "NotIn")))}},
			want: "clusterAffinity.preferred[0].term.matchExpressions[0]: NotIn needs values"},
	}
	p := &ClusterAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := unit(tt.affinity)
			s := p.Prepare(context.Background(), framework.CycleState{}, u, nil)
			if s.IsSuccess() || s.Code != framework.Error || s.Reason != tt.want {
				t.Errorf("Prepare = %+v, want Error %q", s, tt.want)
			}
			// Without Prepare the per-cluster calls report the same error.
			if s := p.Filter(context.Background(), framework.CycleState{}, u, cluster(nil)); s.IsSuccess() || s.Code != framework.Error || s.Reason != tt.want {
				t.Errorf("Filter = %+v, want Error %q", s, tt.want)
			}
			if _, s := p.Score(context.Background(), framework.CycleState{}, u, cluster(nil)); s.IsSuccess() || s.Code != framework.Error {
				t.Errorf("Score = %+v, want Error", s)
			}
		})
	}
}

func TestParseInt(t *testing.T) {
	for s, want := range map[string]bool{"0": true, "-12": true, "+7": true, "": false, "-": false, "1.5": false, "1e3": false,
		"gold": false, "99999999999999999999": false} {
		if _, ok := parseInt(s); ok != want {
			t.Errorf("parseInt(%q) ok = %v, want %v", s, ok, want)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New([]byte("{}")); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"x":1}`)); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("New accepted arguments: %v", err)
	}
}

// BenchmarkFilterScore prepares, filters and scores 100 clusters with two
// required terms (In, Gt) and three preferred terms.
func BenchmarkFilterScore(b *testing.B) {
	regions := []string{"eu-west-1", "eu-central-1", "us-east-1", "ap-south-1"}
	clusters := make([]*v1alpha1.MemberCluster, 100)
	for i := range clusters {
		c := cluster(map[string]string{region: regions[i%4], tier: fmt.Sprint(i % 10), "example.com/provider": "aws",
			v1alpha1.LabelManaged: "true", "kubernetes.io/hostname": fmt.Sprint("member-", i)})
		c.Name = fmt.Sprint("member-", i)
		clusters[i] = c
	}
	u := unit(&v1alpha1.ClusterAffinity{
		RequiredTerms: []v1alpha1.ClusterSelectorTerm{
			selTerm(expr(region, "In", "eu-west-1", "eu-central-1")),
			selTerm(expr(tier, "Gt", "4"), expr("example.com/provider", "Exists")),
		},
		Preferred: []v1alpha1.PreferredClusterTerm{
			preferred(50, selTerm(expr(region, "In", "eu-west-1"))),
			preferred(30, selTerm(expr(tier, "Lt", "8"))),
			preferred(20, selTerm(expr("example.com/gpu", "DoesNotExist"))),
		},
	})
	p := &ClusterAffinity{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		state := framework.CycleState{}
		if s := p.Prepare(ctx, state, u, clusters); !s.IsSuccess() {
			b.Fatal(s.Reason)
		}
		for _, c := range clusters {
			if p.Filter(ctx, state, u, c).IsSuccess() {
				p.Score(ctx, state, u, c)
			}
		}
	}
}
