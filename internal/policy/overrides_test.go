package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
)

func memberCluster(name string, labels map[string]string) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name = name
	c.Labels = labels
	return c
}

func matchLabels(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// rule returns a rule for target whose overriders carry tag in a label, so
// the test can tell which rule a source came from.
func rule(tag string, target v1alpha1.ClusterTarget) v1alpha1.OverrideRule {
	return v1alpha1.OverrideRule{TargetClusters: target, Overriders: v1alpha1.Overriders{
		Labels: &v1alpha1.MapOverrider{Set: map[string]string{"rule": tag}},
	}}
}

var everywhere = v1alpha1.ClusterTarget{}

func cop(name string, sels []v1alpha1.ResourceSelector, rules ...v1alpha1.OverrideRule) v1alpha1.ClusterOverridePolicy {
	p := v1alpha1.ClusterOverridePolicy{Spec: v1alpha1.OverrideSpec{ResourceSelectors: sels, Rules: rules}}
	p.Name = name
	return p
}

func op(namespace, name string, sels []v1alpha1.ResourceSelector, rules ...v1alpha1.OverrideRule) v1alpha1.OverridePolicy {
	p := v1alpha1.OverridePolicy{Spec: v1alpha1.OverrideSpec{ResourceSelectors: sels, Rules: rules}}
	p.Namespace, p.Name = namespace, name
	return p
}

// describe lists sources as "policy rule N=tag".
func describe(srcs []override.Source) []string {
	out := make([]string, 0, len(srcs))
	for _, s := range srcs {
		tag := ""
		if s.Overriders.Labels != nil {
			tag = s.Overriders.Labels.Set["rule"]
		}
		out = append(out, fmt.Sprintf("%s rule %d=%s", s.Policy, s.Rule, tag))
	}
	return out
}

func TestOverrides(t *testing.T) {
	web := deployment("shop", "web", map[string]string{"app": "web"})
	eu1 := memberCluster("member-1", map[string]string{"region": "eu"})
	sels := []v1alpha1.ResourceSelector{deployments}
	byName := func(names ...string) v1alpha1.ClusterTarget { return v1alpha1.ClusterTarget{ClusterNames: names} }
	bySel := func(kv ...string) v1alpha1.ClusterTarget {
		return v1alpha1.ClusterTarget{ClusterSelector: matchLabels(kv...)}
	}
	deletedCOP := cop("deleted", sels, rule("x", everywhere))
	deletedCOP.DeletionTimestamp = &deletedAt
	deletedOP := op("shop", "deleted", sels, rule("x", everywhere))
	deletedOP.DeletionTimestamp = &deletedAt

	tests := []struct {
		name    string
		cluster *v1alpha1.MemberCluster
		cops    []v1alpha1.ClusterOverridePolicy
		ops     []v1alpha1.OverridePolicy
		want    []string
	}{
		{"no policies", eu1, nil, nil, []string{}},
		{"cluster policies by name, then namespaced policies by name", eu1,
			[]v1alpha1.ClusterOverridePolicy{cop("b", sels, rule("b0", everywhere)), cop("a", sels, rule("a0", everywhere))},
			[]v1alpha1.OverridePolicy{op("shop", "z", sels, rule("z0", everywhere)), op("shop", "m", sels, rule("m0", everywhere))},
			[]string{"ClusterOverridePolicy/a rule 0=a0", "ClusterOverridePolicy/b rule 0=b0", "OverridePolicy/shop/m rule 0=m0", "OverridePolicy/shop/z rule 0=z0"}},
		{"rules in order, only those targeting the cluster", eu1, nil,
			[]v1alpha1.OverridePolicy{op("shop", "p", sels,
				rule("all", everywhere),
				rule("other-name", byName("member-2")),
				rule("own-name", byName("member-2", "member-1")),
				rule("us", bySel("region", "us")),
				rule("eu", bySel("region", "eu")),
				rule("eu-but-other-name", v1alpha1.ClusterTarget{ClusterNames: []string{"member-2"}, ClusterSelector: matchLabels("region", "eu")}),
				rule("eu-and-name", v1alpha1.ClusterTarget{ClusterNames: []string{"member-1"}, ClusterSelector: matchLabels("region", "eu")}),
			)},
			[]string{"OverridePolicy/shop/p rule 0=all", "OverridePolicy/shop/p rule 2=own-name", "OverridePolicy/shop/p rule 4=eu", "OverridePolicy/shop/p rule 6=eu-and-name"}},
		{"policies not selecting the object are skipped", eu1,
			[]v1alpha1.ClusterOverridePolicy{cop("configmaps", []v1alpha1.ResourceSelector{selector("v1", "ConfigMap")}, rule("cm", everywhere))},
			[]v1alpha1.OverridePolicy{
				op("shop", "api", []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: matchLabels("app", "api")}}, rule("api", everywhere)),
				op("shop", "web", []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: matchLabels("app", "web")}}, rule("web", everywhere)),
			},
			[]string{"OverridePolicy/shop/web rule 0=web"}},
		{"override policies of other namespaces are ignored", eu1, nil,
			[]v1alpha1.OverridePolicy{op("other", "a", sels, rule("other", everywhere)), op("shop", "b", sels, rule("shop", everywhere))},
			[]string{"OverridePolicy/shop/b rule 0=shop"}},
		{"cluster policy limited to another namespace", eu1,
			[]v1alpha1.ClusterOverridePolicy{cop("other-ns", []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other"}}, rule("x", everywhere))},
			nil, []string{}},
		{"policies being deleted are skipped", eu1,
			[]v1alpha1.ClusterOverridePolicy{deletedCOP, cop("live", sels, rule("c", everywhere))},
			[]v1alpha1.OverridePolicy{deletedOP},
			[]string{"ClusterOverridePolicy/live rule 0=c"}},
		{"a cluster without labels matches no selector", memberCluster("member-1", nil),
			[]v1alpha1.ClusterOverridePolicy{cop("c", sels, rule("eu", bySel("region", "eu")), rule("named", byName("member-1")))},
			nil, []string{"ClusterOverridePolicy/c rule 1=named"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			copsBefore := slices.Clone(tt.cops)
			opsBefore := slices.Clone(tt.ops)
			got := describe(Overrides(web, tt.cluster, tt.cops, tt.ops))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Overrides =\n  %q\nwant\n  %q", got, tt.want)
			}
			for i := range tt.cops {
				if tt.cops[i].Name != copsBefore[i].Name {
					t.Errorf("the ClusterOverridePolicies were reordered")
				}
			}
			for i := range tt.ops {
				if tt.ops[i].Name != opsBefore[i].Name {
					t.Errorf("the OverridePolicies were reordered")
				}
			}
		})
	}
}

func TestOverridesClusterScopedObject(t *testing.T) {
	role := object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer", nil)
	roles := []v1alpha1.ResourceSelector{selector("rbac.authorization.k8s.io/v1", "ClusterRole")}
	got := describe(Overrides(role, memberCluster("member-1", nil),
		[]v1alpha1.ClusterOverridePolicy{cop("roles", roles, rule("c", everywhere))},
		// A namespaced policy never applies to a cluster-scoped object,
		// not even one without a namespace.
		[]v1alpha1.OverridePolicy{op("", "odd", roles, rule("o", everywhere))}))
	want := []string{"ClusterOverridePolicy/roles rule 0=c"}
	if !slices.Equal(got, want) {
		t.Errorf("Overrides = %q, want %q", got, want)
	}
}

// TestOverridesOfClusterAdminKinds: a namespace's OverridePolicy does not
// change its ResourceQuotas and LimitRanges (its users may not write
// them), not even with an unreadable selector; a ClusterOverridePolicy
// does.
func TestOverridesOfClusterAdminKinds(t *testing.T) {
	for _, kind := range []string{"ResourceQuota", "LimitRange"} {
		obj := object("v1", kind, "shop", "limits", nil)
		sels := []v1alpha1.ResourceSelector{selector("v1", kind)}
		unreadable := selector("v1", kind)
		unreadable.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bad"}}}
		got := describe(Overrides(obj, memberCluster("member-1", nil),
			[]v1alpha1.ClusterOverridePolicy{cop("admin", sels, rule("c", everywhere))},
			[]v1alpha1.OverridePolicy{op("shop", "raise", sels, rule("o", everywhere)), op("shop", "stuck", []v1alpha1.ResourceSelector{unreadable}, rule("u", everywhere))}))
		want := []string{"ClusterOverridePolicy/admin rule 0=c"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Overrides = %q, want %q", kind, got, want)
		}
	}
}

func TestOverridesKeepsOverriders(t *testing.T) {
	ov := v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Tag: "1.28"}}}
	got := Overrides(deployment("shop", "web", nil), memberCluster("member-1", nil), nil,
		[]v1alpha1.OverridePolicy{op("shop", "img", []v1alpha1.ResourceSelector{deployments}, v1alpha1.OverrideRule{Overriders: ov})})
	if len(got) != 1 || len(got[0].Overriders.Image) != 1 || got[0].Overriders.Image[0].Tag != "1.28" {
		t.Errorf("Overrides = %+v, want one source with the image tag overrider", got)
	}
}

// TestOverridesMarkNamespaced: a namespace's OverridePolicy's rules are
// marked as such (override.Apply then keeps them off what an RBAC object
// grants), a ClusterOverridePolicy's are not.
func TestOverridesMarkNamespaced(t *testing.T) {
	sels := []v1alpha1.ResourceSelector{deployments}
	got := Overrides(deployment("shop", "web", nil), memberCluster("member-1", nil),
		[]v1alpha1.ClusterOverridePolicy{cop("admin", sels, rule("c", everywhere))},
		[]v1alpha1.OverridePolicy{op("shop", "tenant", sels, rule("o", everywhere))})
	if len(got) != 2 || got[0].Namespaced || !got[1].Namespaced {
		t.Errorf("Overrides = %+v, want the ClusterOverridePolicy's rule not marked namespaced and the OverridePolicy's marked", got)
	}
}

func TestTargetsCluster(t *testing.T) {
	eu1 := memberCluster("member-1", map[string]string{"region": "eu", "tier": "prod"})
	tests := []struct {
		name   string
		target v1alpha1.ClusterTarget
		want   bool
	}{
		{"empty target matches every cluster", v1alpha1.ClusterTarget{}, true},
		{"name listed", v1alpha1.ClusterTarget{ClusterNames: []string{"member-1"}}, true},
		{"name among others", v1alpha1.ClusterTarget{ClusterNames: []string{"member-3", "member-1"}}, true},
		{"name not listed", v1alpha1.ClusterTarget{ClusterNames: []string{"member-2"}}, false},
		{"selector matches", v1alpha1.ClusterTarget{ClusterSelector: matchLabels("region", "eu")}, true},
		{"selector with two labels matches", v1alpha1.ClusterTarget{ClusterSelector: matchLabels("region", "eu", "tier", "prod")}, true},
		{"selector does not match", v1alpha1.ClusterTarget{ClusterSelector: matchLabels("region", "us")}, false},
		{"empty selector matches", v1alpha1.ClusterTarget{ClusterSelector: &metav1.LabelSelector{}}, true},
		{"expression selector", v1alpha1.ClusterTarget{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "ap"}}}}}, true},
		{"NotIn expression excludes", v1alpha1.ClusterTarget{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}}}}}, false},
		{"invalid selector matches nothing", v1alpha1.ClusterTarget{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: "Bogus"}}}}, false},
		{"name and selector both match", v1alpha1.ClusterTarget{ClusterNames: []string{"member-1"}, ClusterSelector: matchLabels("region", "eu")}, true},
		{"name matches, selector does not", v1alpha1.ClusterTarget{ClusterNames: []string{"member-1"}, ClusterSelector: matchLabels("region", "us")}, false},
		{"selector matches, name does not", v1alpha1.ClusterTarget{ClusterNames: []string{"member-2"}, ClusterSelector: matchLabels("region", "eu")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TargetsCluster(tt.target, eu1); got != tt.want {
				t.Errorf("TargetsCluster = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUnreadableSelectorsFailTheCopy: an override policy whose selectors
// cannot be read (an operator in the wrong case) is not skipped in
// silence, which would strip its overrides from every copy: the copies it
// may change get a source that fails, naming the policy and the field.
func TestUnreadableSelectorsFailTheCopy(t *testing.T) {
	web := deployment("shop", "web", map[string]string{"app": "web"})
	eu1 := memberCluster("member-1", map[string]string{"region": "eu"})
	typo := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "exists"}}}
	badResources := deployments
	badResources.LabelSelector = typo
	otherKind := v1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: typo}
	for _, tt := range []struct {
		name string
		cops []v1alpha1.ClusterOverridePolicy
		ops  []v1alpha1.OverridePolicy
		want string // the unreadable source's text, "" for none
	}{
		{"a rule's clusterSelector", []v1alpha1.ClusterOverridePolicy{cop("mirror", []v1alpha1.ResourceSelector{deployments}, rule("a", v1alpha1.ClusterTarget{ClusterSelector: typo}))}, nil,
			"targetClusters.clusterSelector cannot be read"},
		{"a resource selector that may select the object", nil, []v1alpha1.OverridePolicy{op("shop", "mirror", []v1alpha1.ResourceSelector{badResources}, rule("a", everywhere))},
			"resourceSelectors[0].labelSelector cannot be read"},
		{"a resource selector of another kind is not the object's business", []v1alpha1.ClusterOverridePolicy{cop("cm", []v1alpha1.ResourceSelector{otherKind}, rule("a", everywhere))}, nil, ""},
		{"a rule for other clusters by name is not this cluster's business", []v1alpha1.ClusterOverridePolicy{cop("mirror", []v1alpha1.ResourceSelector{deployments},
			rule("a", v1alpha1.ClusterTarget{ClusterNames: []string{"member-2"}, ClusterSelector: typo}))}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srcs := Overrides(web, eu1, tt.cops, tt.ops)
			var got string
			for _, s := range srcs {
				if s.Unreadable != "" {
					got = s.Unreadable
				}
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("unreadable %q, want %q (sources %v)", got, tt.want, describe(srcs))
			}
			if tt.want == "" {
				return
			}
			err := override.Apply(web, srcs)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mirror") {
				t.Errorf("Apply = %v, want an error naming the policy and %q", err, tt.want)
			}
		})
	}
}
