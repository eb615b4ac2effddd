package plugins_test

// This file builds the clusters, placements and units of the default
// profile's table tests, and runs them.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins"
)

var deployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// served is what a test cluster serves unless a case says otherwise: sorted
// by group, version and resource, as the cluster controller keeps it.
var served = []v1alpha1.APIResource{
	{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Scope: v1alpha1.ScopeNamespaced},
	{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Scope: v1alpha1.ScopeNamespaced},
}

var (
	unreachable = corev1.Taint{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}
	notReady    = corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute}
	preferNot   = corev1.Taint{Key: "example.com/busy", Effect: corev1.TaintEffectPreferNoSchedule}
)

type opt func(*v1alpha1.MemberCluster)

func taints(ts ...corev1.Taint) opt {
	return func(c *v1alpha1.MemberCluster) { c.Spec.Taints = append(c.Spec.Taints, ts...) }
}

func deleting(c *v1alpha1.MemberCluster) {
	c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: time.Unix(1735689600, 0)}, []string{"flotilla.io/cluster"}
}

func unready(c *v1alpha1.MemberCluster) {
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Unhealthy"}}
}

func serving(rs ...v1alpha1.APIResource) opt {
	return func(c *v1alpha1.MemberCluster) { c.Status.APIResources = rs }
}

// free gives a cluster 100 cpu and 100Gi of memory, pct percent available.
func free(pct int64) opt {
	return func(c *v1alpha1.MemberCluster) {
		c.Status.Resources.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("100Gi")}
		c.Status.Resources.Available = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(pct, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(pct<<30, resource.BinarySI)}
	}
}

// cluster is a Ready MemberCluster serving ConfigMaps and Deployments.
func cluster(name string, labels map[string]string, opts ...opt) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name, c.Labels = name, labels
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"}}
	c.Status.APIResources = served
	for _, o := range opts {
		o(c)
	}
	return c
}

// three is member-1, member-2 (eu) and member-3 (us, GPU), 80, 50 and 20%
// free, so LeastAllocated ranks them in that order; opts go to member-3.
func three(opts ...opt) []*v1alpha1.MemberCluster {
	return []*v1alpha1.MemberCluster{
		cluster("member-1", map[string]string{"region": "eu", "zone": "eu-1a", "generation": "3"}, free(80)),
		cluster("member-2", map[string]string{"region": "eu", "zone": "eu-1b", "generation": "5"}, free(50)),
		cluster("member-3", map[string]string{"region": "us", "zone": "us-1a", "generation": "7", "gpu": "a100"}, append([]opt{free(20)}, opts...)...),
	}
}

// with applies opts to clusters[i] of cs and returns cs.
func with(cs []*v1alpha1.MemberCluster, i int, opts ...opt) []*v1alpha1.MemberCluster {
	for _, o := range opts {
		o(cs[i])
	}
	return cs
}

type popt func(*v1alpha1.Placement)

func policy(opts ...popt) v1alpha1.Placement {
	var p v1alpha1.Placement
	for _, o := range opts {
		o(&p)
	}
	return p
}

func divide(ws ...v1alpha1.ClusterWeight) popt {
	return func(p *v1alpha1.Placement) {
		p.ReplicaScheduling.Type, p.ReplicaScheduling.Weights = v1alpha1.ReplicaSchedulingDivide, ws
	}
}

func names(n ...string) popt { return func(p *v1alpha1.Placement) { p.ClusterNames = n } }

func selector(key, value string) popt {
	return func(p *v1alpha1.Placement) {
		p.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
}

func maxClusters(n int32) popt { return func(p *v1alpha1.Placement) { p.MaxClusters = ptr.To(n) } }

// tolerate tolerates a taint key (any effect), for seconds when not nil.
func tolerate(key string, seconds *int64) popt {
	return func(p *v1alpha1.Placement) {
		p.Tolerations = append(p.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, TolerationSeconds: seconds})
	}
}

func avoidDisruption(on bool) popt {
	return func(p *v1alpha1.Placement) { p.ReplicaScheduling.AvoidDisruption = ptr.To(on) }
}

func spreadOver(key string, minGroups int32) popt {
	return func(p *v1alpha1.Placement) {
		p.SpreadConstraints = []v1alpha1.SpreadConstraint{{TopologyKey: key, MinGroups: ptr.To(minGroups)}}
	}
}

// require adds a required term, prefer a preferred one: each expression
// is "key op value,value".
func require(exprs ...string) popt { return prefer(0, exprs...) }

func prefer(weight int32, exprs ...string) popt {
	return func(p *v1alpha1.Placement) {
		if p.ClusterAffinity == nil {
			p.ClusterAffinity = &v1alpha1.ClusterAffinity{}
		}
		if a := p.ClusterAffinity; weight == 0 {
			a.RequiredTerms = append(a.RequiredTerms, term(exprs...))
		} else {
			a.Preferred = append(a.Preferred, v1alpha1.PreferredClusterTerm{Weight: weight, Term: term(exprs...)})
		}
	}
}

func term(exprs ...string) v1alpha1.ClusterSelectorTerm {
	var t v1alpha1.ClusterSelectorTerm
	for _, e := range exprs {
		f := strings.Fields(e)
		r := v1alpha1.ClusterSelectorRequirement{Key: f[0], Operator: v1alpha1.ClusterSelectorOperator(f[1])}
		if len(f) > 2 {
			r.Values = strings.Split(f[2], ",")
		}
		t.MatchExpressions = append(t.MatchExpressions, r)
	}
	return t
}

func weight(c string, w int32) v1alpha1.ClusterWeight { return bounded(c, w, nil, nil) }

func bounded(c string, w int32, lo, hi *int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: c, Weight: w, MinReplicas: lo, MaxReplicas: hi}
}

func n(v int32) *int32 { return &v }

// placed parses "member-1=2 member-2" (no "=": no replica count).
func placed(s string) []v1alpha1.ClusterPlacement {
	var out []v1alpha1.ClusterPlacement
	for _, f := range strings.Fields(s) {
		name, count, ok := strings.Cut(f, "=")
		p := v1alpha1.ClusterPlacement{Cluster: name}
		if ok {
			v, _ := strconv.Atoi(count)
			p.Replicas = ptr.To(int32(v))
		}
		out = append(out, p)
	}
	return out
}

// format writes a placement as placed reads it.
func format(ps []v1alpha1.ClusterPlacement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if parts[i] = p.Cluster; p.Replicas != nil {
			parts[i] += fmt.Sprintf("=%d", *p.Replicas)
		}
	}
	return strings.Join(parts, " ")
}

// unit is the Deployment shop/web, its placement narrowed by annotations as
// scheduler.NewUnit does.
func unit(p v1alpha1.Placement, annotations map[string]string, replicas *int32, current string) *framework.Unit {
	return &framework.Unit{Key: "shop/web", GVK: deployment, Namespace: "shop", Name: "web", Replicas: replicas,
		Placement: scheduler.Narrow(&p, annotations), Current: placed(current)}
}

func defaultProfile(tb testing.TB) *framework.Profile {
	tb.Helper()
	p, err := framework.Build("", nil, plugins.Registry(), plugins.Defaults(), nil)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	return p
}

// scheduleCase is a decision: want is the placement as format writes it,
// excluded the names of the excluded clusters, err the decision's error.
type scheduleCase struct {
	name, current            string
	placement                v1alpha1.Placement
	annotations              map[string]string
	replicas                 *int32
	clusters                 []*v1alpha1.MemberCluster
	want, msg, excluded, err string
}

func runCases(t *testing.T, tests []scheduleCase) {
	t.Helper()
	p := defaultProfile(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Schedule(context.Background(), unit(tt.placement, tt.annotations, tt.replicas, tt.current), tt.clusters)
			if tt.err != "" || err != nil {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if got := format(res.Placement); got != tt.want {
				t.Errorf("placement = %q, want %q", got, tt.want)
			}
			if res.Message != tt.msg {
				t.Errorf("message = %q, want %q", res.Message, tt.msg)
			}
			if got := strings.Join(slices.Sorted(maps.Keys(res.Excluded)), " "); got != tt.excluded {
				t.Errorf("excluded = %q, want %q", got, tt.excluded)
			}
			if res.Total != len(tt.clusters) || res.Feasible != res.Total-len(res.Excluded) {
				t.Errorf("total %d, feasible %d with %d excluded of %d clusters", res.Total, res.Feasible, len(res.Excluded), len(tt.clusters))
			}
		})
	}
}
