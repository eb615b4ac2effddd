package scheduler

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// NewUnit describes a FederatedObject's template for the scheduler: its
// kind, replicas, one replica's requests, the active capacity limits from
// its status, and the policy's placement
// narrowed by the object's own annotations (AnnotationClusterNames,
// AnnotationMaxClusters) and made sticky where the object asks or is a
// StatefulSet (AnnotationSticky). Annotations can only narrow: a user who may edit
// the object cannot escape the policy owner's constraints.
func NewUnit(fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, placement *v1alpha1.Placement) *framework.Unit {
	u := &framework.Unit{
		Key:       fo.Namespace + "/" + fo.Name,
		GVK:       tmpl.GroupVersionKind(),
		Namespace: tmpl.GetNamespace(),
		Name:      tmpl.GetName(),
		Placement: Narrow(placement, tmpl.GetAnnotations()),
		Current:   fo.Placement(),
	}
	if spec := PodSpec(tmpl); spec != nil {
		if reqs := nodefit.TemplateRequests(spec); len(reqs) > 0 {
			u.Requests = reqs
		}
		u.Shape = nodefit.NewShape(spec)
	}
	if n, ok := workload.Replicas(tmpl); ok {
		u.Replicas = ptr.To(n)
	}
	if u.Placement != nil {
		u.Placement.Sticky = sticky(u.Placement, u.GVK.GroupKind(), tmpl.GetAnnotations())
		if u.Replicas == nil && u.GVK.GroupKind() == cronJob && u.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivide {
			// Divided, a CronJob's one run goes to one cluster.
			u.Replicas = ptr.To[int32](1)
		}
	}
	for _, l := range fo.Status.CapacityLimits {
		if l.LiftedAt != nil {
			continue
		}
		if u.Limits == nil {
			u.Limits = map[string]int32{}
		}
		u.Limits[l.Cluster] = max(l.Replicas, 0)
	}
	return u
}

// Narrow applies the narrowing annotations to a copy of a placement.
func Narrow(p *v1alpha1.Placement, annotations map[string]string) *v1alpha1.Placement {
	out := p.DeepCopy()
	if v, ok := annotations[v1alpha1.AnnotationClusterNames]; ok {
		var names []string
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" && (len(p.ClusterNames) == 0 || slices.Contains(p.ClusterNames, n)) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			names = []string{""} // nothing allowed: matches no cluster
		}
		slices.Sort(names)
		out.ClusterNames = slices.Compact(names)
	}
	if _, ok := annotations[v1alpha1.AnnotationEmptyPlacement]; ok {
		out.EmptyPlacement = EmptyPlacement(p, annotations)
	}
	if v, ok := annotations[v1alpha1.AnnotationMaxClusters]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n >= 1 && (p.MaxClusters == nil || int32(n) < *p.MaxClusters) {
			out.MaxClusters = ptr.To(int32(n))
		}
	}
	return out
}

// EmptyPlacement is what an object's placement does when no cluster fits:
// the annotation flotilla.io/empty-placement (allow or keep, any case)
// when set to one of those, else the policy's field, else Keep.
func EmptyPlacement(p *v1alpha1.Placement, annotations map[string]string) v1alpha1.EmptyPlacement {
	switch strings.ToLower(strings.TrimSpace(annotations[v1alpha1.AnnotationEmptyPlacement])) {
	case "allow":
		return v1alpha1.EmptyPlacementAllow
	case "keep":
		return v1alpha1.EmptyPlacementKeep
	}
	if p != nil && p.EmptyPlacement == v1alpha1.EmptyPlacementAllow {
		return v1alpha1.EmptyPlacementAllow
	}
	return v1alpha1.EmptyPlacementKeep
}

// Requests returns one replica's resource requests from an object's pod
// template (containers, init containers and overhead, as the kube-scheduler
// counts them, a resource only limited requested at its limit); nil when the
// object has no pod template.
func Requests(tmpl *unstructured.Unstructured) corev1.ResourceList {
	spec := PodSpec(tmpl)
	if spec == nil {
		return nil
	}
	reqs := nodefit.TemplateRequests(spec)
	if len(reqs) == 0 {
		return nil
	}
	return reqs
}

// PodSpec returns an object's pod template's spec; nil when it has none
// (or it does not decode).
func PodSpec(tmpl *unstructured.Unstructured) *corev1.PodSpec {
	path := workload.PodSpecPath(tmpl)
	if path == nil {
		return nil
	}
	raw, found, _ := unstructured.NestedMap(tmpl.Object, path...)
	if !found {
		return nil
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil
	}
	return spec
}

// ForceDrained reports whether a cluster was drained with `flotilla drain
// --force`: its copies may go even when no other cluster takes them.
func ForceDrained(mc *v1alpha1.MemberCluster) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == v1alpha1.TaintDraining && t.Effect == corev1.TaintEffectNoExecute && t.Value == v1alpha1.DrainForce {
			return true
		}
	}
	return false
}
