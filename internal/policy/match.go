package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Kinds of the policy references.
const (
	KindPropagationPolicy        = "PropagationPolicy"
	KindClusterPropagationPolicy = "ClusterPropagationPolicy"
)

// Chosen is the policy that propagates an object.
type Chosen struct {
	// Ref names the policy.
	Ref v1alpha1.PolicyReference
	// Spec is the policy's spec.
	Spec *v1alpha1.PropagationSpec
}

// Decision is what Decide found for an object.
type Decision struct {
	// Chosen is the policy that propagates the object, nil for none.
	Chosen *Chosen
	// NotApplicable, when set, says which policy label on the object names
	// a policy that may not select it, and why. No policy propagates the
	// object then (Chosen is nil).
	NotApplicable string
	// Unreadable, when set, names a policy whose label selector cannot be
	// read and may select the object, so that which policy propagates it
	// cannot be decided (Chosen is nil): the object's federation stays as
	// it is until the policy is fixed, rather than passing to another
	// policy, or to none, because of a typo.
	Unreadable string
}

// Select returns the policy that propagates obj, or nil. It is Decide
// without the explanation.
func Select(obj *unstructured.Unstructured, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy) *Chosen {
	return Decide(obj, pps, cpps).Chosen
}

// Decide returns the policy that propagates obj. A policy label can only
// narrow: it chooses the policy it names (the namespaced label before the
// cluster one) among the policies allowed to select obj, whatever their
// priority. A policy may select obj when its resourceSelectors do (a
// PropagationPolicy only in its own namespace), or, for a policy without
// resourceSelectors, when it is a PropagationPolicy of obj's namespace or a
// ClusterPropagationPolicy and obj is cluster-scoped. A label naming an
// existing policy that may not select obj leaves obj unpropagated, with the
// reason in NotApplicable; a label naming a policy that does not exist (or
// is being deleted) is ignored. Without a label the resource selectors
// decide: the highest priority wins, then a PropagationPolicy over a
// ClusterPropagationPolicy, then the first name. pps must be the policies
// of obj's namespace.
func Decide(obj *unstructured.Unstructured, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy) Decision {
	if Ignored(obj) {
		return Decision{}
	}
	if d, ok := byLabel(obj, pps, cpps); ok {
		return d
	}
	best := bySelectors(obj, pps, cpps)
	if why := unreadablePolicy(obj, pps, cpps, best); why != "" {
		return Decision{Unreadable: why}
	}
	return Decision{Chosen: best}
}

// unreadablePolicy names the first policy (by precedence) whose selectors
// cannot tell whether they select obj and that would win over best (the
// readable policy chosen, nil for none), and why; "" when there is none.
// A policy best outranks cannot change the choice, typo or not.
func unreadablePolicy(obj *unstructured.Unstructured, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy, best *Chosen) string {
	var found *Chosen
	var why string
	consider := func(c Chosen, w string) {
		if w == "" || (best != nil && precedes(*best, c) <= 0) || (found != nil && precedes(*found, c) <= 0) {
			return
		}
		found, why = &c, w
	}
	for i := range pps {
		p := &pps[i]
		if p.Namespace != obj.GetNamespace() || !p.DeletionTimestamp.IsZero() {
			continue
		}
		c := Chosen{Ref: v1alpha1.PolicyReference{Kind: KindPropagationPolicy, Namespace: p.Namespace, Name: p.Name}, Spec: &p.Spec}
		consider(c, unreadableSelector(p.Spec.ResourceSelectors, obj, p.Namespace))
	}
	for i := range cpps {
		p := &cpps[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		c := Chosen{Ref: v1alpha1.PolicyReference{Kind: KindClusterPropagationPolicy, Name: p.Name}, Spec: &p.Spec}
		consider(c, unreadableSelector(p.Spec.ResourceSelectors, obj, ""))
	}
	if found == nil {
		return ""
	}
	if found.Ref.Kind == KindPropagationPolicy {
		return fmt.Sprintf("PropagationPolicy %s/%s: %s", found.Ref.Namespace, found.Ref.Name, why)
	}
	return fmt.Sprintf("ClusterPropagationPolicy %s: %s", found.Ref.Name, why)
}

// notSelected explains a label naming a policy whose selectors do not
// select the object.
const notSelected = "whose resourceSelectors do not select this object (a label only chooses among the policies that select it)"

// byLabel applies the policy labels; ok is false when no label names an
// existing policy.
func byLabel(obj *unstructured.Unstructured, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy) (d Decision, ok bool) {
	ns := obj.GetNamespace()
	if name := obj.GetLabels()[v1alpha1.LabelPropagationPolicy]; name != "" && ns != "" && !ClusterAdminKind(obj) {
		for i := range pps {
			p := &pps[i]
			if p.Name != name || p.Namespace != ns || !p.DeletionTimestamp.IsZero() {
				continue
			}
			if len(p.Spec.ResourceSelectors) == 0 || SelectsAny(p.Spec.ResourceSelectors, obj, ns) {
				return Decision{Chosen: &Chosen{Ref: v1alpha1.PolicyReference{Kind: KindPropagationPolicy, Namespace: ns, Name: name}, Spec: &p.Spec}}, true
			}
			if why := unreadableSelector(p.Spec.ResourceSelectors, obj, ns); why != "" {
				return Decision{Unreadable: fmt.Sprintf("PropagationPolicy %s/%s: %s", ns, name, why)}, true
			}
			return Decision{NotApplicable: fmt.Sprintf("label %s=%s names PropagationPolicy %s/%s, %s",
				v1alpha1.LabelPropagationPolicy, name, ns, name, notSelected)}, true
		}
	}
	if name := obj.GetLabels()[v1alpha1.LabelClusterPropagationPolicy]; name != "" {
		for i := range cpps {
			p := &cpps[i]
			if p.Name != name || !p.DeletionTimestamp.IsZero() {
				continue
			}
			sels := p.Spec.ResourceSelectors
			if (len(sels) == 0 && ns == "") || SelectsAny(sels, obj, "") {
				return Decision{Chosen: &Chosen{Ref: v1alpha1.PolicyReference{Kind: KindClusterPropagationPolicy, Name: name}, Spec: &p.Spec}}, true
			}
			if why := unreadableSelector(sels, obj, ""); why != "" {
				return Decision{Unreadable: fmt.Sprintf("ClusterPropagationPolicy %s: %s", name, why)}, true
			}
			why := notSelected
			if len(sels) == 0 {
				why = "which has no resourceSelectors: by label alone it applies only to cluster-scoped objects"
			}
			return Decision{NotApplicable: fmt.Sprintf("label %s=%s names ClusterPropagationPolicy %s, %s",
				v1alpha1.LabelClusterPropagationPolicy, name, name, why)}, true
		}
	}
	return Decision{}, false
}

// bySelectors returns the policy whose resource selectors select obj with
// the highest precedence, or nil.
func bySelectors(obj *unstructured.Unstructured, pps []v1alpha1.PropagationPolicy, cpps []v1alpha1.ClusterPropagationPolicy) *Chosen {
	var candidates []Chosen
	for i := range pps {
		p := &pps[i]
		if p.Namespace == obj.GetNamespace() && p.DeletionTimestamp.IsZero() && SelectsAny(p.Spec.ResourceSelectors, obj, p.Namespace) {
			candidates = append(candidates, Chosen{Ref: v1alpha1.PolicyReference{Kind: KindPropagationPolicy, Namespace: p.Namespace, Name: p.Name}, Spec: &p.Spec})
		}
	}
	for i := range cpps {
		p := &cpps[i]
		if p.DeletionTimestamp.IsZero() && SelectsAny(p.Spec.ResourceSelectors, obj, "") {
			candidates = append(candidates, Chosen{Ref: v1alpha1.PolicyReference{Kind: KindClusterPropagationPolicy, Name: p.Name}, Spec: &p.Spec})
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	best := slices.MinFunc(candidates, precedes)
	return &best
}

// precedes orders candidate policies: negative when a wins over b (the
// higher priority, then a PropagationPolicy over a
// ClusterPropagationPolicy, then the first name).
func precedes(a, b Chosen) int {
	if c := cmp.Compare(b.Spec.Priority, a.Spec.Priority); c != 0 {
		return c
	}
	if a.Ref.Kind != b.Ref.Kind { // PropagationPolicy first
		if a.Ref.Kind == KindPropagationPolicy {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.Ref.Name, b.Ref.Name)
}

// ClusterAdminKind reports whether obj is of a namespaced kind that the
// default namespace roles (admin, edit) do not let a namespace's users
// write: the limits a cluster admin puts on a namespace (ResourceQuota,
// LimitRange). A namespace's own policies (PropagationPolicies,
// OverridePolicies) neither select nor change them, so that its users
// cannot take them out of the members, or change them there, through
// Flotilla; cluster policies do.
func ClusterAdminKind(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && (gvk.Kind == "ResourceQuota" || gvk.Kind == "LimitRange")
}

// SelectsAny reports whether any selector selects obj. policyNamespace is
// the namespace of a namespaced policy ("" for cluster policies): such a
// policy selects only objects in it, and none of a ClusterAdminKind.
func SelectsAny(selectors []v1alpha1.ResourceSelector, obj *unstructured.Unstructured, policyNamespace string) bool {
	if policyNamespace != "" && (obj.GetNamespace() != policyNamespace || ClusterAdminKind(obj)) {
		return false
	}
	for _, s := range selectors {
		if Selects(s, obj, policyNamespace == "") {
			return true
		}
	}
	return false
}

// unreadableSelector says why a policy's selectors cannot tell whether
// they select obj (a selector that matches obj's kind, namespace and name
// has a label selector that does not parse), or "" when they can. Such a
// selector selects nothing in Selects; an override policy is then not
// ignored in silence (its overrides would vanish from every copy) but
// fails the copies it may change.
func unreadableSelector(selectors []v1alpha1.ResourceSelector, obj *unstructured.Unstructured, policyNamespace string) string {
	if policyNamespace != "" && (obj.GetNamespace() != policyNamespace || ClusterAdminKind(obj)) {
		return ""
	}
	for i, s := range selectors {
		if s.LabelSelector == nil {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err == nil {
			continue
		}
		bare := s
		bare.LabelSelector = nil
		if Selects(bare, obj, policyNamespace == "") {
			_, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
			return fmt.Sprintf("resourceSelectors[%d].labelSelector cannot be read (%v)", i, err)
		}
	}
	return ""
}

// Selects reports whether one selector selects obj. The selector's version
// is not compared: a kind is the same object in every version the host
// serves. The namespace field counts only for cluster policies.
func Selects(s v1alpha1.ResourceSelector, obj *unstructured.Unstructured, clusterPolicy bool) bool {
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil {
		return false
	}
	gvk := obj.GroupVersionKind()
	if gv.Group != gvk.Group || s.Kind != gvk.Kind {
		return false
	}
	if clusterPolicy && s.Namespace != "" && s.Namespace != obj.GetNamespace() {
		return false
	}
	if s.Name != "" && s.Name != obj.GetName() {
		return false
	}
	if s.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(obj.GetLabels())) {
			return false
		}
	}
	return true
}

// systemNamespaces hold each cluster's own machinery; nothing in them is
// propagated.
var systemNamespaces = map[string]bool{
	"kube-system": true, "kube-public": true, "kube-node-lease": true, v1alpha1.SystemNamespace: true,
}

// Ignored reports whether an object is never propagated: it lives in a
// system namespace, is one of those namespaces, or is what every cluster
// makes for itself in each namespace (the kube-root-ca.crt ConfigMap, the
// default ServiceAccount, service-account token Secrets) or for each
// Deployment (its ReplicaSets).
func Ignored(obj *unstructured.Unstructured) bool {
	if systemNamespaces[obj.GetNamespace()] {
		return true
	}
	gvk := obj.GroupVersionKind()
	if gvk.Group == "apps" && gvk.Kind == "ReplicaSet" {
		// A Deployment's ReplicaSets: each member's Deployment makes its
		// own, and the host's are its revision history.
		return controlledBy(obj, "apps", "Deployment")
	}
	if gvk.Group != "" {
		return false
	}
	switch gvk.Kind {
	case "Namespace":
		return systemNamespaces[obj.GetName()] || obj.GetName() == "default"
	case "ConfigMap":
		return obj.GetName() == "kube-root-ca.crt"
	case "ServiceAccount":
		return obj.GetName() == "default"
	case "Secret":
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		return t == string(corev1.SecretTypeServiceAccountToken)
	}
	return false
}

// controlledBy reports whether obj's controller is of kind group/kind.
func controlledBy(obj *unstructured.Unstructured, group, kind string) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.Kind == kind && strings.HasPrefix(ref.APIVersion, group+"/") {
			return true
		}
	}
	return false
}
