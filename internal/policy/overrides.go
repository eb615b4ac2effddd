package policy

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
)

// Overrides returns the override rules for obj's copy in cluster, in the
// order they apply: ClusterOverridePolicies by name, then the
// OverridePolicies of obj's namespace by name; within a policy, its rules
// in order. ops must be the policies of obj's namespace.
func Overrides(obj *unstructured.Unstructured, cluster *v1alpha1.MemberCluster, cops []v1alpha1.ClusterOverridePolicy, ops []v1alpha1.OverridePolicy) []override.Source {
	var out []override.Source
	cops = slices.Clone(cops)
	slices.SortFunc(cops, func(a, b v1alpha1.ClusterOverridePolicy) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range cops {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		name := "ClusterOverridePolicy/" + p.Name
		if why := unreadableSelector(p.Spec.ResourceSelectors, obj, ""); why != "" {
			out = append(out, override.Source{Policy: name, Rule: -1, Unreadable: why})
			continue
		}
		if SelectsAny(p.Spec.ResourceSelectors, obj, "") {
			out = append(out, rulesFor(cluster, name, false, p.Spec.Rules)...)
		}
	}
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b v1alpha1.OverridePolicy) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range ops {
		if obj.GetNamespace() == "" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		name := fmt.Sprintf("OverridePolicy/%s/%s", p.Namespace, p.Name)
		if why := unreadableSelector(p.Spec.ResourceSelectors, obj, p.Namespace); why != "" {
			out = append(out, override.Source{Policy: name, Rule: -1, Namespaced: true, Unreadable: why})
			continue
		}
		if SelectsAny(p.Spec.ResourceSelectors, obj, p.Namespace) {
			out = append(out, rulesFor(cluster, name, true, p.Spec.Rules)...)
		}
	}
	return out
}

func rulesFor(cluster *v1alpha1.MemberCluster, policy string, namespaced bool, rules []v1alpha1.OverrideRule) []override.Source {
	var out []override.Source
	for i, r := range rules {
		if names := r.TargetClusters.ClusterNames; len(names) > 0 && !slices.Contains(names, cluster.Name) {
			continue // never this cluster's, whatever its selector says
		}
		if sel := r.TargetClusters.ClusterSelector; sel != nil {
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				out = append(out, override.Source{Policy: policy, Rule: i, Namespaced: namespaced,
					Unreadable: fmt.Sprintf("targetClusters.clusterSelector cannot be read (%v)", err)})
				continue
			}
		}
		if TargetsCluster(r.TargetClusters, cluster) {
			out = append(out, override.Source{Policy: policy, Rule: i, Overriders: r.Overriders, Namespaced: namespaced})
		}
	}
	return out
}

// TargetsCluster reports whether a target matches a cluster: by name when
// names are listed, by labels when a selector is set, both when both are.
func TargetsCluster(t v1alpha1.ClusterTarget, cluster *v1alpha1.MemberCluster) bool {
	if len(t.ClusterNames) > 0 && !slices.Contains(t.ClusterNames, cluster.Name) {
		return false
	}
	if t.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(t.ClusterSelector)
		if err != nil || !sel.Matches(labels.Set(cluster.Labels)) {
			return false
		}
	}
	return true
}
