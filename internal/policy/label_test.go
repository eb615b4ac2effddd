package policy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestDecideLabelOnlyNarrows checks that a policy label chooses only among
// the policies allowed to select the object, and explains a label it
// cannot honour.
func TestDecideLabelOnlyNarrows(t *testing.T) {
	labelled := func(labels map[string]string) *unstructured.Unstructured {
		l := map[string]string{"app": "web"}
		for k, v := range labels {
			l[k] = v
		}
		return deployment("shop", "web", l)
	}
	cppLabel := func(name string) *unstructured.Unstructured {
		return labelled(map[string]string{v1alpha1.LabelClusterPropagationPolicy: name})
	}
	ppLabel := func(name string) *unstructured.Unstructured {
		return labelled(map[string]string{v1alpha1.LabelPropagationPolicy: name})
	}
	inNamespace := func(s v1alpha1.ResourceSelector, ns string) v1alpha1.ResourceSelector {
		s.Namespace = ns
		return s
	}
	// The documented way for an admin to offer a cluster policy by label:
	// a selector on the label itself, limited to allowed namespaces.
	byOwnLabel := func(name, ns string) v1alpha1.ResourceSelector {
		s := inNamespace(deployments, ns)
		s.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelClusterPropagationPolicy: name}}
		return s
	}
	clusterRole := func(labels map[string]string) *unstructured.Unstructured {
		return object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer", labels)
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		pps  []v1alpha1.PropagationPolicy
		cpps []v1alpha1.ClusterPropagationPolicy
		want string
		// notApplicable: substrings of Decision.NotApplicable; none means
		// it must be empty.
		notApplicable []string
	}{
		{name: "cluster label naming a policy whose selectors do not select the object",
			obj:           cppLabel("admin"),
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("admin", 0, inNamespace(deployments, "payments"))},
			notApplicable: []string{v1alpha1.LabelClusterPropagationPolicy + "=admin", "ClusterPropagationPolicy admin", "resourceSelectors do not select"}},
		{name: "cluster label naming a policy of another kind's selectors",
			obj:           cppLabel("configs"),
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("configs", 0, selector("v1", "ConfigMap"))},
			notApplicable: []string{"ClusterPropagationPolicy configs", "resourceSelectors do not select"}},
		{name: "an inapplicable label is not replaced by the selectors: not propagated",
			obj:           cppLabel("admin"),
			pps:           []v1alpha1.PropagationPolicy{pp("shop", "local", 0, deployments)},
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("admin", 0, inNamespace(deployments, "payments")), cpp("global", 0, deployments)},
			notApplicable: []string{"ClusterPropagationPolicy admin"}},
		{name: "label-only cluster policy and a namespaced object",
			obj:           cppLabel("adopter"),
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("adopter", 0)},
			notApplicable: []string{"ClusterPropagationPolicy adopter", "no resourceSelectors", "cluster-scoped"}},
		{name: "label-only cluster policy and a cluster-scoped object",
			obj:  clusterRole(map[string]string{v1alpha1.LabelClusterPropagationPolicy: "roles"}),
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("roles", 0), cpp("a-other", 100, selector("rbac.authorization.k8s.io/v1", "ClusterRole"))},
			want: "ClusterPropagationPolicy/roles"},
		{name: "cluster label on a cluster-scoped object the policy's selectors do not select",
			obj:           clusterRole(map[string]string{v1alpha1.LabelClusterPropagationPolicy: "deploys"}),
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("deploys", 0, deployments)},
			notApplicable: []string{"ClusterPropagationPolicy deploys", "resourceSelectors do not select"}},
		{name: "cluster label narrows among two selecting policies to the named one",
			obj:  cppLabel("low"),
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("high", 100, deployments), cpp("low", 0, deployments)},
			want: "ClusterPropagationPolicy/low"},
		{name: "cluster label narrows to a cluster policy over a namespace's policy",
			obj:  cppLabel("global"),
			pps:  []v1alpha1.PropagationPolicy{pp("shop", "local", 10, deployments)},
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("global", 0, inNamespace(deployments, "shop"))},
			want: "ClusterPropagationPolicy/global"},
		{name: "cluster policy selecting its own label in an allowed namespace",
			obj:  cppLabel("offered"),
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("offered", 0, byOwnLabel("offered", "shop"))},
			want: "ClusterPropagationPolicy/offered"},
		{name: "cluster policy selecting its own label in another namespace only",
			obj:           cppLabel("offered"),
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("offered", 0, byOwnLabel("offered", "payments"))},
			notApplicable: []string{"ClusterPropagationPolicy offered"}},
		{name: "namespaced label narrows among two selecting policies to the named one",
			obj:  ppLabel("low"),
			pps:  []v1alpha1.PropagationPolicy{pp("shop", "high", 100, deployments), pp("shop", "low", 0, deployments)},
			want: "PropagationPolicy/shop/low"},
		{name: "label-only policy of the object's namespace",
			obj:  ppLabel("mine"),
			pps:  []v1alpha1.PropagationPolicy{pp("shop", "mine", 0)},
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("global", 100, deployments)},
			want: "PropagationPolicy/shop/mine"},
		{name: "namespaced label naming a policy of the namespace whose selectors do not select the object",
			obj:           ppLabel("configs"),
			pps:           []v1alpha1.PropagationPolicy{pp("shop", "configs", 0, selector("v1", "ConfigMap")), pp("shop", "all", 0, deployments)},
			notApplicable: []string{v1alpha1.LabelPropagationPolicy + "=configs", "PropagationPolicy shop/configs", "resourceSelectors do not select"}},
		{name: "namespaced label naming a policy of another namespace is not chosen",
			obj:  ppLabel("theirs"),
			pps:  []v1alpha1.PropagationPolicy{pp("other", "theirs", 100), pp("shop", "local", 0, deployments)},
			want: "PropagationPolicy/shop/local"},
		{name: "namespaced label naming a policy of another namespace, nothing else selects",
			obj: ppLabel("theirs"),
			pps: []v1alpha1.PropagationPolicy{pp("other", "theirs", 0, deployments)}},
		{name: "the first label naming an existing policy decides",
			obj:           labelled(map[string]string{v1alpha1.LabelPropagationPolicy: "configs", v1alpha1.LabelClusterPropagationPolicy: "global"}),
			pps:           []v1alpha1.PropagationPolicy{pp("shop", "configs", 0, selector("v1", "ConfigMap"))},
			cpps:          []v1alpha1.ClusterPropagationPolicy{cpp("global", 0, deployments)},
			notApplicable: []string{"PropagationPolicy shop/configs"}},
		{name: "a namespaced label naming no policy leaves the cluster label to decide",
			obj:  labelled(map[string]string{v1alpha1.LabelPropagationPolicy: "missing", v1alpha1.LabelClusterPropagationPolicy: "global"}),
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("global", 0, deployments)},
			want: "ClusterPropagationPolicy/global"},
		{name: "cluster label naming a missing policy: selectors decide",
			obj:  cppLabel("missing"),
			cpps: []v1alpha1.ClusterPropagationPolicy{cpp("global", 0, deployments)},
			want: "ClusterPropagationPolicy/global"},
		{name: "cluster label naming a policy being deleted: selectors decide",
			obj:  cppLabel("going"),
			cpps: []v1alpha1.ClusterPropagationPolicy{deletedCPP(cpp("going", 0)), cpp("global", 0, deployments)},
			want: "ClusterPropagationPolicy/global"},
		{name: "no label: no explanation",
			obj: deployment("shop", "web", nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.obj, tt.pps, tt.cpps)
			if s := refString(d.Chosen); s != tt.want {
				t.Errorf("Decide chose %q, want %q", s, tt.want)
			}
			if len(tt.notApplicable) == 0 && d.NotApplicable != "" {
				t.Errorf("NotApplicable = %q, want none", d.NotApplicable)
			}
			for _, sub := range tt.notApplicable {
				if !strings.Contains(d.NotApplicable, sub) {
					t.Errorf("NotApplicable = %q, want it to mention %q", d.NotApplicable, sub)
				}
			}
			if got := Select(tt.obj, tt.pps, tt.cpps); refString(got) != refString(d.Chosen) {
				t.Errorf("Select = %q, Decide = %q", refString(got), refString(d.Chosen))
			}
		})
	}
}
