package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// object returns a host object; labels may be nil.
func object(apiVersion, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(namespace)
	u.SetName(name)
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func deployment(namespace, name string, labels map[string]string) *unstructured.Unstructured {
	return object("apps/v1", "Deployment", namespace, name, labels)
}

func selector(apiVersion, kind string) v1alpha1.ResourceSelector {
	return v1alpha1.ResourceSelector{APIVersion: apiVersion, Kind: kind}
}

var deployments = selector("apps/v1", "Deployment")

func pp(namespace, name string, priority int32, sels ...v1alpha1.ResourceSelector) v1alpha1.PropagationPolicy {
	p := v1alpha1.PropagationPolicy{Spec: v1alpha1.PropagationSpec{ResourceSelectors: sels, Priority: priority}}
	p.Namespace, p.Name = namespace, name
	return p
}

func cpp(name string, priority int32, sels ...v1alpha1.ResourceSelector) v1alpha1.ClusterPropagationPolicy {
	p := v1alpha1.ClusterPropagationPolicy{Spec: v1alpha1.PropagationSpec{ResourceSelectors: sels, Priority: priority}}
	p.Name = name
	return p
}

var deletedAt = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))

func deletedPP(p v1alpha1.PropagationPolicy) v1alpha1.PropagationPolicy {
	p.DeletionTimestamp = &deletedAt
	return p
}

func deletedCPP(p v1alpha1.ClusterPropagationPolicy) v1alpha1.ClusterPropagationPolicy {
	p.DeletionTimestamp = &deletedAt
	return p
}

// refString names a chosen policy, "" for none.
func refString(c *Chosen) string {
	if c == nil {
		return ""
	}
	if c.Ref.Namespace == "" {
		return c.Ref.Kind + "/" + c.Ref.Name
	}
	return c.Ref.Kind + "/" + c.Ref.Namespace + "/" + c.Ref.Name
}

func TestSelect(t *testing.T) {
	web := deployment("shop", "web", map[string]string{"app": "web"})
	withLabel := func(k, v string) *unstructured.Unstructured {
		u := deployment("shop", "web", map[string]string{"app": "web", k: v})
		return u
	}
	labelled := func(app string) v1alpha1.ResourceSelector {
		s := deployments
		s.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		return s
	}
	inNamespace := func(ns string) v1alpha1.ResourceSelector {
		s := deployments
		s.Namespace = ns
		return s
	}
	named := func(name string) v1alpha1.ResourceSelector {
		s := deployments
		s.Name = name
		return s
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		pps  []v1alpha1.PropagationPolicy
		cpps []v1alpha1.ClusterPropagationPolicy
		want string
	}{
		{"no policies", web, nil, nil, ""},
		{"no selector matches", web, []v1alpha1.PropagationPolicy{pp("shop", "cm", 0, selector("v1", "ConfigMap"))}, nil, ""},
		{"propagation policy selector", web, []v1alpha1.PropagationPolicy{pp("shop", "all", 0, deployments)}, nil, "PropagationPolicy/shop/all"},
		// A namespace's users may not write its ResourceQuotas and
		// LimitRanges: their own policies do not decide about them.
		{"a namespace's policy does not take its quota from a cluster policy", object("v1", "ResourceQuota", "shop", "limits", nil),
			[]v1alpha1.PropagationPolicy{pp("shop", "mine", 1000, selector("v1", "ResourceQuota"))},
			[]v1alpha1.ClusterPropagationPolicy{cpp("quotas", 0, selector("v1", "ResourceQuota"))}, "ClusterPropagationPolicy/quotas"},
		{"a namespace's policy named by a quota's label does not take it either",
			object("v1", "ResourceQuota", "shop", "limits", map[string]string{v1alpha1.LabelPropagationPolicy: "mine"}),
			[]v1alpha1.PropagationPolicy{pp("shop", "mine", 0)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("quotas", 0, selector("v1", "ResourceQuota"))}, "ClusterPropagationPolicy/quotas"},
		{"a namespace's policy does not select a LimitRange", object("v1", "LimitRange", "shop", "defaults", nil),
			[]v1alpha1.PropagationPolicy{pp("shop", "mine", 0, selector("v1", "LimitRange"))}, nil, ""},
		{"cluster policy selector", web, nil, []v1alpha1.ClusterPropagationPolicy{cpp("global", 0, deployments)}, "ClusterPropagationPolicy/global"},
		{"explicit label wins over higher-priority selectors",
			withLabel(v1alpha1.LabelPropagationPolicy, "chosen"),
			[]v1alpha1.PropagationPolicy{pp("shop", "a-high", 100, deployments), pp("shop", "chosen", 0)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("a-global", 1000, deployments)},
			"PropagationPolicy/shop/chosen"},
		{"namespaced label before cluster label",
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{
				"namespace": "shop", "name": "web",
				"labels": map[string]any{v1alpha1.LabelPropagationPolicy: "mine", v1alpha1.LabelClusterPropagationPolicy: "theirs"}}}},
			[]v1alpha1.PropagationPolicy{pp("shop", "mine", 0)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("theirs", 0)},
			"PropagationPolicy/shop/mine"},
		{"cluster label wins over higher-priority selectors among the selecting policies",
			withLabel(v1alpha1.LabelClusterPropagationPolicy, "theirs"),
			[]v1alpha1.PropagationPolicy{pp("shop", "selecting", 100, deployments)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("theirs", 0, deployments)},
			"ClusterPropagationPolicy/theirs"},
		{"label naming a missing policy falls back to selectors",
			withLabel(v1alpha1.LabelPropagationPolicy, "missing"),
			nil,
			[]v1alpha1.ClusterPropagationPolicy{cpp("global", 0, deployments)},
			"ClusterPropagationPolicy/global"},
		{"label naming a policy of another namespace falls back",
			withLabel(v1alpha1.LabelPropagationPolicy, "elsewhere"),
			[]v1alpha1.PropagationPolicy{pp("other", "elsewhere", 0, deployments), pp("shop", "local", 0, deployments)},
			nil,
			"PropagationPolicy/shop/local"},
		{"label naming a policy being deleted falls back",
			withLabel(v1alpha1.LabelPropagationPolicy, "going"),
			[]v1alpha1.PropagationPolicy{deletedPP(pp("shop", "going", 0, deployments)), pp("shop", "staying", 0, deployments)},
			nil,
			"PropagationPolicy/shop/staying"},
		{"missing cluster label falls back",
			withLabel(v1alpha1.LabelClusterPropagationPolicy, "missing"),
			[]v1alpha1.PropagationPolicy{pp("shop", "local", 0, deployments)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("other", 0)},
			"PropagationPolicy/shop/local"},
		{"cluster label naming a policy being deleted falls back to nothing",
			withLabel(v1alpha1.LabelClusterPropagationPolicy, "going"),
			nil,
			[]v1alpha1.ClusterPropagationPolicy{deletedCPP(cpp("going", 0, deployments))},
			""},
		{"namespaced label on a cluster-scoped object is ignored",
			object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer", map[string]string{v1alpha1.LabelPropagationPolicy: "p"}),
			[]v1alpha1.PropagationPolicy{pp("", "p", 0)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("roles", 0, selector("rbac.authorization.k8s.io/v1", "ClusterRole"))},
			"ClusterPropagationPolicy/roles"},
		{"highest priority wins", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "low", 5, deployments)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("high", 10, deployments)},
			"ClusterPropagationPolicy/high"},
		{"negative priority loses", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "negative", -1, deployments)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("zero", 0, deployments)},
			"ClusterPropagationPolicy/zero"},
		{"tie: propagation policy over cluster policy", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "zz", 3, deployments)},
			[]v1alpha1.ClusterPropagationPolicy{cpp("aa", 3, deployments)},
			"PropagationPolicy/shop/zz"},
		{"tie: first name among propagation policies", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "beta", 1, deployments), pp("shop", "alpha", 1, deployments), pp("shop", "gamma", 1, deployments)},
			nil, "PropagationPolicy/shop/alpha"},
		{"tie: first name among cluster policies", web, nil,
			[]v1alpha1.ClusterPropagationPolicy{cpp("b", 0, deployments), cpp("a", 0, deployments)},
			"ClusterPropagationPolicy/a"},
		{"namespaced policy never selects another namespace", web,
			[]v1alpha1.PropagationPolicy{pp("other", "all", 100, deployments)}, nil, ""},
		{"namespaced policy ignores the selector's namespace field", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, inNamespace("other"))}, nil, "PropagationPolicy/shop/p"},
		{"cluster selector namespace matches", web, nil,
			[]v1alpha1.ClusterPropagationPolicy{cpp("shop-only", 0, inNamespace("shop"))}, "ClusterPropagationPolicy/shop-only"},
		{"cluster selector namespace does not match", web, nil,
			[]v1alpha1.ClusterPropagationPolicy{cpp("other-only", 0, inNamespace("other"))}, ""},
		{"selector by name matches", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, named("web"))}, nil, "PropagationPolicy/shop/p"},
		{"selector by name does not match", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, named("api"))}, nil, ""},
		{"label selector matches", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, labelled("web"))}, nil, "PropagationPolicy/shop/p"},
		{"label selector does not match, the next policy does", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "api", 10, labelled("api")), pp("shop", "any", 0, deployments)}, nil, "PropagationPolicy/shop/any"},
		{"label selector on an object without labels", deployment("shop", "bare", nil),
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, labelled("web"))}, nil, ""},
		{"invalid label selector selects nothing", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, v1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment",
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}})},
			nil, ""},
		{"any of several selectors", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "p", 0, selector("v1", "ConfigMap"), deployments)}, nil, "PropagationPolicy/shop/p"},
		{"version ignored: apps/v1beta1 selects apps/v1", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "old", 0, selector("apps/v1beta1", "Deployment"))}, nil, "PropagationPolicy/shop/old"},
		{"group compared: v1 Deployment does not select apps", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "core", 0, selector("v1", "Deployment"))}, nil, ""},
		{"group compared: apps ConfigMap does not select core", object("v1", "ConfigMap", "shop", "cfg", nil),
			[]v1alpha1.PropagationPolicy{pp("shop", "apps", 0, selector("apps/v1", "ConfigMap"))}, nil, ""},
		{"kind compared", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "sts", 0, selector("apps/v1", "StatefulSet"))}, nil, ""},
		{"unparsable apiVersion selects nothing", web,
			[]v1alpha1.PropagationPolicy{pp("shop", "bad", 0, selector("apps/v1/extra", "Deployment"))}, nil, ""},
		{"policies being deleted are skipped", web,
			[]v1alpha1.PropagationPolicy{deletedPP(pp("shop", "going", 100, deployments))},
			[]v1alpha1.ClusterPropagationPolicy{deletedCPP(cpp("going-too", 100, deployments)), cpp("staying", 0, deployments)},
			"ClusterPropagationPolicy/staying"},
		{"ignored object even with a label", object("v1", "ConfigMap", "kube-system", "cfg", map[string]string{v1alpha1.LabelPropagationPolicy: "p"}),
			[]v1alpha1.PropagationPolicy{pp("kube-system", "p", 0, selector("v1", "ConfigMap"))}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Select(tt.obj, tt.pps, tt.cpps)
			if s := refString(got); s != tt.want {
				t.Fatalf("Select = %q, want %q", s, tt.want)
			}
			if got == nil {
				return
			}
			// Spec points at the chosen policy's own spec.
			var want *v1alpha1.PropagationSpec
			for i := range tt.pps {
				if got.Ref.Kind == KindPropagationPolicy && tt.pps[i].Name == got.Ref.Name && tt.pps[i].Namespace == got.Ref.Namespace {
					want = &tt.pps[i].Spec
				}
			}
			for i := range tt.cpps {
				if got.Ref.Kind == KindClusterPropagationPolicy && tt.cpps[i].Name == got.Ref.Name {
					want = &tt.cpps[i].Spec
				}
			}
			if got.Spec != want {
				t.Errorf("Spec does not point at the chosen policy's spec")
			}
		})
	}
}

func TestIgnored(t *testing.T) {
	secret := func(ns, name, typ string) *unstructured.Unstructured {
		u := object("v1", "Secret", ns, name, nil)
		if typ != "" {
			u.Object["type"] = typ
		}
		return u
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"deployment in kube-system", deployment("kube-system", "coredns", nil), true},
		{"configmap in kube-public", object("v1", "ConfigMap", "kube-public", "cluster-info", nil), true},
		{"lease in kube-node-lease", object("coordination.k8s.io/v1", "Lease", "kube-node-lease", "node-1", nil), true},
		{"secret in flotilla-system", secret(v1alpha1.SystemNamespace, "creds", ""), true},
		{"deployment in an app namespace", deployment("shop", "web", nil), false},
		{"kube-root-ca.crt configmap", object("v1", "ConfigMap", "shop", "kube-root-ca.crt", nil), true},
		{"other configmap", object("v1", "ConfigMap", "shop", "settings", nil), false},
		{"kube-root-ca.crt of another group", object("example.com/v1", "ConfigMap", "shop", "kube-root-ca.crt", nil), false},
		{"default serviceaccount", object("v1", "ServiceAccount", "shop", "default", nil), true},
		{"other serviceaccount", object("v1", "ServiceAccount", "shop", "web", nil), false},
		{"service-account-token secret", secret("shop", "web-token", "kubernetes.io/service-account-token"), true},
		{"opaque secret", secret("shop", "db", "Opaque"), false},
		{"secret without type", secret("shop", "db", ""), false},
		{"namespace kube-system", object("v1", "Namespace", "", "kube-system", nil), true},
		{"namespace flotilla-system", object("v1", "Namespace", "", v1alpha1.SystemNamespace, nil), true},
		{"namespace default", object("v1", "Namespace", "", "default", nil), true},
		{"namespace shop", object("v1", "Namespace", "", "shop", nil), false},
		{"deployment named default", deployment("shop", "default", nil), false},
		{"a Deployment's ReplicaSet", ownedBy(object("apps/v1", "ReplicaSet", "shop", "web-1", nil), "apps/v1", "Deployment", true), true},
		{"a ReplicaSet of its own", object("apps/v1", "ReplicaSet", "shop", "web-1", nil), false},
		{"a ReplicaSet a Deployment owns but does not control", ownedBy(object("apps/v1", "ReplicaSet", "shop", "web-1", nil), "apps/v1", "Deployment", false), false},
		{"a ReplicaSet controlled by another kind", ownedBy(object("apps/v1", "ReplicaSet", "shop", "web-1", nil), "example.com/v1", "Deployment", true), false},
		{"cluster-scoped kind", object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer", nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ignored(tt.obj); got != tt.want {
				t.Errorf("Ignored = %v, want %v", got, tt.want)
			}
		})
	}
}

// ownedBy adds an owner reference to u.
func ownedBy(u *unstructured.Unstructured, apiVersion, kind string, controller bool) *unstructured.Unstructured {
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "web", UID: "1", Controller: &controller}})
	return u
}

// TestDecideWithAnUnreadablePolicy: a policy whose label selector cannot
// be read and may select the object leaves the decision open (the
// object's federation stays as it is) instead of passing the object to
// another policy, or to none; one for another kind changes nothing.
func TestDecideWithAnUnreadablePolicy(t *testing.T) {
	web := deployment("shop", "web", map[string]string{"app": "web"})
	typo := deployments
	typo.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "in", Values: []string{"web"}}}}
	cmTypo := selector("v1", "ConfigMap")
	cmTypo.LabelSelector = typo.LabelSelector
	fallback := cpp("everything", 0, deployments)

	d := Decide(web, []v1alpha1.PropagationPolicy{pp("shop", "web", 10, typo)}, []v1alpha1.ClusterPropagationPolicy{fallback})
	if d.Chosen != nil || d.Unreadable == "" {
		t.Fatalf("Decide = chosen %+v, unreadable %q; want no choice and the reason", d.Chosen, d.Unreadable)
	}
	for _, want := range []string{"PropagationPolicy shop/web", "resourceSelectors[0].labelSelector"} {
		if !strings.Contains(d.Unreadable, want) {
			t.Errorf("Unreadable %q does not name %q", d.Unreadable, want)
		}
	}
	d = Decide(web, []v1alpha1.PropagationPolicy{pp("shop", "cm", 10, cmTypo)}, []v1alpha1.ClusterPropagationPolicy{fallback})
	if d.Unreadable != "" || d.Chosen == nil || d.Chosen.Ref.Name != "everything" {
		t.Errorf("a typo in a ConfigMap selector: chosen %+v, unreadable %q; want the fallback chosen", d.Chosen, d.Unreadable)
	}
	// A typo in a policy the chosen one outranks changes nothing.
	lowTypo := cpp("catch-all", 0, typo)
	d = Decide(web, []v1alpha1.PropagationPolicy{pp("shop", "web", 10, deployments)}, []v1alpha1.ClusterPropagationPolicy{lowTypo})
	if d.Unreadable != "" || d.Chosen == nil || d.Chosen.Ref.Name != "web" {
		t.Errorf("a typo in a lower-priority policy: chosen %+v, unreadable %q; want web chosen", d.Chosen, d.Unreadable)
	}
	// An object that names the policy with the typo by label keeps its
	// federation too.
	labelled := deployment("shop", "web", map[string]string{"app": "web", v1alpha1.LabelPropagationPolicy: "web"})
	d = Decide(labelled, []v1alpha1.PropagationPolicy{pp("shop", "web", 0, typo)}, []v1alpha1.ClusterPropagationPolicy{fallback})
	if d.Chosen != nil || d.NotApplicable != "" || !strings.Contains(d.Unreadable, "PropagationPolicy shop/web") {
		t.Errorf("labelled for the policy with the typo: chosen %+v, not applicable %q, unreadable %q; want unreadable", d.Chosen, d.NotApplicable, d.Unreadable)
	}
}
