package policy

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Vocabularies the policy fuzzer picks from, one byte per choice; the
// fuzzer's own strings are the last namespace and the last label value.
var (
	fzKinds = []struct{ apiVersion, kind string }{
		{"apps/v1", "Deployment"}, {"v1", "ConfigMap"}, {"v1", "Secret"}, {"v1", "Namespace"},
		{"v1", "ServiceAccount"}, {"example.com/v1", "Widget"}, {"rbac.authorization.k8s.io/v1", "ClusterRole"},
	}
	fzNamespaces  = []string{"shop", "other", "", "kube-system", v1alpha1.SystemNamespace, "kube-public", "kube-node-lease"}
	fzObjectNames = []string{"web", "db", "default", "kube-root-ca.crt", "kube-system"}
	fzLabelKeys   = []string{"app", "tier", v1alpha1.LabelPropagationPolicy, v1alpha1.LabelClusterPropagationPolicy}
	fzLabelValues = []string{"web", "db", "p0", "p1", "p2", ""}
	fzPriorities  = []int32{0, 1, -1, 2, 5, math.MaxInt32, math.MinInt32}
	fzAPIVersions = []string{"apps/v1", "v1", "example.com/v1", "apps/v2", "a/b/c", "", "rbac.authorization.k8s.io/v1"}
	fzSelKinds    = []string{"Deployment", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "Widget", "ClusterRole", ""}
	fzSelNames    = []string{"", "web", "db"}
	fzSelNS       = []string{"", "shop", "other", "kube-system"}
	fzOperators   = []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, "Bogus"}
)

// fzReader hands out the fuzz bytes one choice at a time (0 once they run
// out).
type fzReader struct {
	data []byte
	ns   string // the fuzzer's namespace
	val  string // the fuzzer's label value
}

func (r *fzReader) byte() int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b)
}

// pick returns a choice in [0, n).
func (r *fzReader) pick(n int) int { return r.byte() % n }

func (r *fzReader) namespace() string {
	if i := r.pick(len(fzNamespaces) + 1); i < len(fzNamespaces) {
		return fzNamespaces[i]
	}
	return r.ns
}

func (r *fzReader) labelValue() string {
	if i := r.pick(len(fzLabelValues) + 1); i < len(fzLabelValues) {
		return fzLabelValues[i]
	}
	return r.val
}

// object reads: kind, namespace, name, label count, (key, value) per label,
// and whether a Secret is a service-account token.
func (r *fzReader) object() *unstructured.Unstructured {
	k := fzKinds[r.pick(len(fzKinds))]
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.apiVersion, "kind": k.kind}}
	u.SetNamespace(r.namespace())
	u.SetName(fzObjectNames[r.pick(len(fzObjectNames))])
	if n := r.pick(4); n > 0 {
		labels := map[string]string{}
		for range n {
			labels[fzLabelKeys[r.pick(len(fzLabelKeys))]] = r.labelValue()
		}
		u.SetLabels(labels)
	}
	if r.pick(2) == 1 {
		u.Object["type"] = "kubernetes.io/service-account-token"
	}
	return u
}

// spec reads: priority, selector count, and per selector apiVersion, kind,
// name, namespace and label selector (0 none, 1 empty, 2 matchLabels, 3
// matchExpressions; 2 and 3 then read key, operator, value).
func (r *fzReader) spec() v1alpha1.PropagationSpec {
	spec := v1alpha1.PropagationSpec{Priority: fzPriorities[r.pick(len(fzPriorities))]}
	for range r.pick(3) {
		s := v1alpha1.ResourceSelector{
			APIVersion: fzAPIVersions[r.pick(len(fzAPIVersions))],
			Kind:       fzSelKinds[r.pick(len(fzSelKinds))],
			Name:       fzSelNames[r.pick(len(fzSelNames))],
			Namespace:  fzSelNS[r.pick(len(fzSelNS))],
		}
		switch r.pick(4) {
		case 1:
			s.LabelSelector = &metav1.LabelSelector{}
		case 2:
			s.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{fzLabelKeys[r.pick(len(fzLabelKeys))]: r.labelValue()}}
		case 3:
			req := metav1.LabelSelectorRequirement{Key: fzLabelKeys[r.pick(len(fzLabelKeys))], Operator: fzOperators[r.pick(len(fzOperators))]}
			if v := r.labelValue(); v != "" {
				req.Values = []string{v}
			}
			s.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req}}
		}
		spec.ResourceSelectors = append(spec.ResourceSelectors, s)
	}
	return spec
}

// fzSystemNamespaces are the namespaces whose objects are never propagated.
var fzSystemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true, v1alpha1.SystemNamespace: true}

var fzDeleted = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))

// policies reads: count, then per PropagationPolicy namespace, name (p0..p3),
// deleted, spec; then count, then per ClusterPropagationPolicy name,
// deleted, spec. What the API server would not hold is skipped: names
// repeated in a namespace (or among cluster policies) and
// PropagationPolicies without a namespace.
func (r *fzReader) policies() ([]v1alpha1.PropagationPolicy, []v1alpha1.ClusterPropagationPolicy) {
	var pps []v1alpha1.PropagationPolicy
	seen := map[string]bool{}
	for range r.pick(5) {
		var p v1alpha1.PropagationPolicy
		p.Namespace, p.Name = r.namespace(), "p"+strconv.Itoa(r.pick(4))
		if r.pick(4) == 0 {
			p.DeletionTimestamp = &fzDeleted
		}
		p.Spec = r.spec()
		if key := p.Namespace + "/" + p.Name; p.Namespace != "" && !seen[key] { // a PropagationPolicy always has a namespace
			seen[key] = true
			pps = append(pps, p)
		}
	}
	var cpps []v1alpha1.ClusterPropagationPolicy
	for range r.pick(5) {
		var p v1alpha1.ClusterPropagationPolicy
		p.Name = "p" + strconv.Itoa(r.pick(4))
		if r.pick(4) == 0 {
			p.DeletionTimestamp = &fzDeleted
		}
		p.Spec = r.spec()
		if !seen[p.Name] {
			seen[p.Name] = true
			cpps = append(cpps, p)
		}
	}
	return pps, cpps
}

// FuzzSelect checks policy selection for invariants that hold whatever the
// label and selector rules are: the chosen policy is one of the inputs and
// not being deleted; a PropagationPolicy is chosen only for an object of
// its own namespace, and policies of other namespaces never change the
// choice; objects Ignored (system namespaces, cluster-made objects) are
// never selected; the choice does not depend on the order of the policies,
// and Select changes none of its inputs.
func FuzzSelect(f *testing.F) {
	// Layout: object (kind, namespace, name, #labels, key/value pairs,
	// token), #PropagationPolicies (namespace, name, deleted, priority,
	// #selectors, selectors), #ClusterPropagationPolicies (name, deleted,
	// priority, #selectors, selectors); a selector is apiVersion, kind,
	// name, namespace, label selector kind [, key, operator, value].
	seeds := [][]byte{
		// Deployment shop/web app=web; PropagationPolicy shop/p0 selecting Deployments.
		{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0},
		// The namespaced label names shop/p1 (no selectors); higher-priority policies select it too.
		{0, 0, 0, 2, 0, 0, 2, 3, 0, 2, 0, 0, 1, 4, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 5, 1, 0, 0, 0, 0, 0},
		// The cluster label names p2; a PropagationPolicy selects it with priority 5.
		{0, 0, 0, 1, 3, 4, 0, 1, 0, 0, 1, 4, 1, 0, 0, 0, 0, 0, 1, 2, 1, 0, 0},
		// A labelled ConfigMap in kube-system and a policy there selecting ConfigMaps.
		{1, 3, 0, 1, 2, 2, 0, 1, 3, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0},
		// Policies being deleted: PropagationPolicy p0, ClusterPropagationPolicies p1 and p2.
		{0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0, 0, 0},
		// Ties: p1 and p0 in shop and cluster p3, all priority 1.
		{0, 0, 0, 0, 0, 2, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 3, 1, 1, 1, 0, 0, 0, 0, 0},
		// An invalid label selector (operator Bogus) and a matchLabels one.
		{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 1, 0, 1, 0, 0, 0, 0, 3, 0, 4, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0},
		// A cluster-scoped ClusterRole with the namespaced label; a cluster policy selects ClusterRoles.
		{6, 2, 0, 1, 2, 2, 0, 1, 2, 0, 1, 0, 0, 1, 1, 1, 0, 1, 6, 6, 0, 0, 0},
		// The default ServiceAccount and a token Secret, selected by a cluster policy.
		{4, 0, 2, 0, 0, 0, 1, 0, 1, 0, 1, 1, 4, 0, 0, 0},
		{2, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 2, 0, 0, 0},
	}
	for _, s := range seeds {
		f.Add(s, "shop", "p0")
	}
	f.Add([]byte{0, 7, 0, 1, 3, 6, 0, 1, 0, 7, 0, 1, 0, 0, 1, 0, 0, 0, 0, 2}, "team-a", "p1")
	f.Fuzz(func(t *testing.T, data []byte, ns, val string) {
		r := &fzReader{data: data, ns: ns, val: val}
		obj := r.object()
		pps, cpps := r.policies()

		objBefore := obj.DeepCopy()
		ppsBefore, cppsBefore := deepCopyPPs(pps), deepCopyCPPs(cpps)
		got := Select(obj, pps, cpps)
		if !reflect.DeepEqual(obj.Object, objBefore.Object) || !reflect.DeepEqual(pps, ppsBefore) || !reflect.DeepEqual(cpps, cppsBefore) {
			t.Fatalf("Select changed its inputs")
		}
		if got != nil {
			checkChosen(t, obj, got, pps, cpps)
		}

		// The order of the policies does not matter.
		revPPs, revCPPs := slices.Clone(pps), slices.Clone(cpps)
		slices.Reverse(revPPs)
		slices.Reverse(revCPPs)
		if other := Select(obj, revPPs, revCPPs); !sameChoice(got, other) {
			t.Fatalf("Select depends on the policies' order: %s then %s", describeChosen(got), describeChosen(other))
		}

		// Policies of another namespace change nothing, whatever they say.
		foreign := deepCopyPPs(pps)
		for i := range foreign {
			foreign[i].Namespace = obj.GetNamespace() + "-elsewhere"
		}
		if other := Select(obj, append(slices.Clone(pps), foreign...), cpps); !sameChoice(got, other) {
			t.Fatalf("policies of another namespace changed the choice: %s then %s", describeChosen(got), describeChosen(other))
		}
	})
}

// checkChosen fails unless chosen is one of the inputs that may propagate
// obj.
func checkChosen(t *testing.T, obj *unstructured.Unstructured, chosen *Chosen, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy) {
	t.Helper()
	if Ignored(obj) || fzSystemNamespaces[obj.GetNamespace()] {
		t.Fatalf("Select chose %s for the ignored object %s %s/%s", describeChosen(chosen), obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	switch chosen.Ref.Kind {
	case KindPropagationPolicy:
		if obj.GetNamespace() == "" || chosen.Ref.Namespace != obj.GetNamespace() {
			t.Fatalf("Select chose %s for an object in namespace %q", describeChosen(chosen), obj.GetNamespace())
		}
		for i := range pps {
			if pps[i].Namespace == chosen.Ref.Namespace && pps[i].Name == chosen.Ref.Name {
				if pps[i].DeletionTimestamp != nil {
					t.Fatalf("Select chose %s, which is being deleted", describeChosen(chosen))
				}
				if !reflect.DeepEqual(*chosen.Spec, pps[i].Spec) {
					t.Fatalf("Select chose %s with another spec", describeChosen(chosen))
				}
				return
			}
		}
	case KindClusterPropagationPolicy:
		if chosen.Ref.Namespace != "" {
			t.Fatalf("Select chose %s with a namespace", describeChosen(chosen))
		}
		for i := range cpps {
			if cpps[i].Name == chosen.Ref.Name {
				if cpps[i].DeletionTimestamp != nil {
					t.Fatalf("Select chose %s, which is being deleted", describeChosen(chosen))
				}
				if !reflect.DeepEqual(*chosen.Spec, cpps[i].Spec) {
					t.Fatalf("Select chose %s with another spec", describeChosen(chosen))
				}
				return
			}
		}
	}
	t.Fatalf("Select chose %s, which is not one of the inputs", describeChosen(chosen))
}

// sameChoice reports whether two results name the same policy with the
// same spec.
func sameChoice(a, b *Chosen) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Ref == b.Ref && reflect.DeepEqual(*a.Spec, *b.Spec)
}

// describeChosen names a result for failure messages.
func describeChosen(c *Chosen) string {
	if c == nil {
		return "nothing"
	}
	return c.Ref.Kind + " " + c.Ref.Namespace + "/" + c.Ref.Name
}

func deepCopyPPs(in []v1alpha1.PropagationPolicy) []v1alpha1.PropagationPolicy {
	if in == nil {
		return nil
	}
	out := make([]v1alpha1.PropagationPolicy, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func deepCopyCPPs(in []v1alpha1.ClusterPropagationPolicy) []v1alpha1.ClusterPropagationPolicy {
	if in == nil {
		return nil
	}
	out := make([]v1alpha1.ClusterPropagationPolicy, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
