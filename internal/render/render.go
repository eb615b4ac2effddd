// Package render turns a host template into the object one member cluster
// receives: host-assigned fields that mean nothing in a member are dropped,
// the cluster's replicas are set, and the override rules for the cluster
// are applied.
package render

import (
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Input is one member copy to render.
type Input struct {
	// Template is the host object; it is not modified.
	Template *unstructured.Unstructured
	// Placement is the cluster's entry in the placement.
	Placement v1alpha1.ClusterPlacement
	// Overrides are the rules for the cluster, in order.
	Overrides []override.Source
	// Rollout, when set, is the copy's part in a federated rollout
	// (internal/rollout): its revision label, held or its share of the
	// budget.
	Rollout *rollout.Directive
}

// Render returns the object for one cluster.
func Render(in Input) (*unstructured.Unstructured, error) {
	obj := withoutStatus(in.Template)
	Sanitize(obj)
	if _, ok := workload.Replicas(obj); ok && in.Placement.Replicas != nil {
		if err := workload.SetReplicas(obj, *in.Placement.Replicas); err != nil {
			return nil, err
		}
	}
	if err := setOrdinalStart(obj, in.Placement.OrdinalStart); err != nil {
		return nil, err
	}
	if err := override.Apply(obj, in.Overrides); err != nil {
		return nil, err
	}
	if in.Rollout != nil {
		if err := setRollout(obj, *in.Rollout); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// setRollout applies a federated rollout's directive to a copy, after
// the overrides (the federation's budget is not theirs to change): the
// revision label, then a Deployment's, a StatefulSet's or a custom kind's
// (its WorkloadInterpreter's rollout rule) hold or share.
func setRollout(obj *unstructured.Unstructured, d rollout.Directive) error {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelRevision] = d.Revision
	obj.SetLabels(labels)
	if rollout.StatefulSet(obj) {
		return holdStatefulSet(obj, d)
	}
	if in := workload.RolloutInterpreter(obj); in != nil {
		// A custom kind: its rule's paused and budget fields.
		switch {
		case d.Hold && !in.RolloutPaused(obj):
			markHeld(obj)
			return in.SetRolloutPaused(obj)
		case d.Share != nil:
			return in.SetRolloutShare(obj, d.Share.Surge, d.Share.Unavailable)
		}
		return nil
	}
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); d.Hold && !paused {
		markHeld(obj)
		return unstructured.SetNestedField(obj.Object, true, "spec", "paused")
	}
	if d.Share == nil || strategyType(obj, "strategy") == "Recreate" {
		// A copy an override set to Recreate takes no rolling-update budget
		// (the member would refuse it): it replaces its pods at its turn.
		return nil
	}
	if err := unstructured.SetNestedField(obj.Object, int64(d.Share.Surge), "spec", "strategy", "rollingUpdate", "maxSurge"); err != nil {
		return err
	}
	return unstructured.SetNestedField(obj.Object, int64(d.Share.Unavailable), "spec", "strategy", "rollingUpdate", "maxUnavailable")
}

// heldPartition is a held StatefulSet copy's partition: above any
// position, so that no pod moves to the new template whatever the member
// scales it to (Kubernetes accepts a partition above the replicas).
const heldPartition = math.MaxInt32

// holdStatefulSet holds a Deployment's counterpart (unless the copy's
// updateStrategy is OnDelete): a held StatefulSet
// copy's partition is above every position, so that no pod of it moves to
// the new template (new ones start on the old, Kubernetes' rule for
// positions below the partition), and it is annotated flotilla.io/held; a rolling
// one with a share gets it as maxUnavailable when the template sets one
// (a member without the MaxUnavailableStatefulSet feature rolls one pod
// at a time, within any share).
func holdStatefulSet(obj *unstructured.Unstructured, d rollout.Directive) error {
	if strategyType(obj, "updateStrategy") == "OnDelete" {
		// A copy an override set to OnDelete takes no partition or budget
		// (the member would refuse them): its pods change only as they are
		// deleted.
		return nil
	}
	if d.Hold {
		markHeld(obj)
		return unstructured.SetNestedField(obj.Object, int64(heldPartition), "spec", "updateStrategy", "rollingUpdate", "partition")
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); d.Share != nil && set {
		return unstructured.SetNestedField(obj.Object, int64(d.Share.Unavailable), "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	}
	return nil
}

// strategyType is the type of a workload's spec.<field> (strategy or
// updateStrategy), "" when unset.
func strategyType(obj *unstructured.Unstructured, field string) string {
	t, _, _ := unstructured.NestedString(obj.Object, "spec", field, "type")
	return t
}

// markHeld annotates a held copy flotilla.io/held.
func markHeld(obj *unstructured.Unstructured) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AnnotationHeld] = "true"
	obj.SetAnnotations(annotations)
}

// setOrdinalStart numbers a StatefulSet's pods in the cluster from start
// (its range of the federation's ordinals). A start of 0 is the default
// and is left out, so that a member without spec.ordinals (before
// Kubernetes 1.27) takes the first range. An Indexed Job's containers are
// told their range's first index instead (Kubernetes numbers a Job's
// indexes from 0).
func setOrdinalStart(obj *unstructured.Unstructured, start *int32) error {
	gvk := obj.GroupVersionKind()
	if start != nil && workload.IndexedJob(obj) {
		return workload.SetCompletionIndexOffset(obj, *start)
	}
	if start == nil || gvk.Group != "apps" || gvk.Kind != "StatefulSet" {
		return nil
	}
	if err := shiftPartition(obj, *start); err != nil {
		return err
	}
	if *start == 0 {
		unstructured.RemoveNestedField(obj.Object, "spec", "ordinals", "start")
		if o, found, _ := unstructured.NestedMap(obj.Object, "spec", "ordinals"); found && len(o) == 0 {
			unstructured.RemoveNestedField(obj.Object, "spec", "ordinals")
		}
		return nil
	}
	return unstructured.SetNestedField(obj.Object, int64(*start), "spec", "ordinals", "start")
}

// shiftPartition makes a StatefulSet's rolling-update partition count
// the federation's ordinals: Kubernetes applies a partition to the
// position of a pod among its StatefulSet's replicas (from its
// ordinals.start), so a copy whose range starts start-base positions into
// the federation's (base: the template's own start) gets the host's
// partition less that, at least 0. Called before the copy's start is
// set.
func shiftPartition(obj *unstructured.Unstructured, start int32) error {
	p, found, err := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	if !found || err != nil {
		return nil
	}
	base, _, _ := unstructured.NestedInt64(obj.Object, "spec", "ordinals", "start")
	shifted := max(p-(int64(start)-base), 0)
	return unstructured.SetNestedField(obj.Object, shifted, "spec", "updateStrategy", "rollingUpdate", "partition")
}

// withoutStatus is a deep copy of tmpl without its status, which a
// rendered object never carries (copying it only to drop it would cost
// every pass).
func withoutStatus(tmpl *unstructured.Unstructured) *unstructured.Unstructured {
	obj := make(map[string]any, len(tmpl.Object))
	for k, v := range tmpl.Object {
		if k != "status" {
			obj[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return &unstructured.Unstructured{Object: obj}
}

// RetainsReplicas reports whether the template asks, with the annotation
// flotilla.io/retain-replicas: "true", that member copies keep the
// replicas a member-side actor (an HPA) set: the rendered replicas are then
// only the initial value.
func RetainsReplicas(tmpl *unstructured.Unstructured) bool {
	return tmpl.GetAnnotations()[v1alpha1.AnnotationRetainReplicas] == "true"
}

// Sanitize drops from a template what the host's apiserver assigned and a
// member must assign for itself: every object's server-set metadata and
// status, the annotations a member's workload controllers keep (a
// template exported from a cluster carries that cluster's), a Service's
// cluster IPs and node ports, and a Job's generated selector and the
// labels that carry the host Job's UID.
func Sanitize(obj *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	gvk := obj.GroupVersionKind()
	if owned := controllerAnnotations[gvk.GroupKind()]; len(owned) > 0 {
		if a := obj.GetAnnotations(); a != nil {
			for _, k := range owned {
				delete(a, k)
			}
			if len(a) == 0 {
				a = nil
			}
			obj.SetAnnotations(a)
		}
	}
	switch {
	case gvk.Group == "" && gvk.Kind == "Service":
		sanitizeService(obj)
	case gvk.Group == "batch" && gvk.Kind == "Job":
		sanitizeJob(obj)
	}
}

// controllerAnnotations are the annotations a member's own controllers
// set on workloads of a kind: copying the template's would fight them, a
// write on every change they make.
var controllerAnnotations = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}: {"deployment.kubernetes.io/revision"},
	{Group: "apps", Kind: "DaemonSet"}:  {"deprecated.daemonset.template.generation"},
}

func sanitizeService(obj *unstructured.Unstructured) {
	if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
	}
	// The member picks its own IP families and node ports.
	unstructured.RemoveNestedField(obj.Object, "spec", "ipFamilies")
	unstructured.RemoveNestedField(obj.Object, "spec", "ipFamilyPolicy")
	unstructured.RemoveNestedField(obj.Object, "spec", "healthCheckNodePort")
	ports, found, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	if !found {
		return
	}
	for i := range ports {
		if p, ok := ports[i].(map[string]any); ok {
			delete(p, "nodePort")
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
}

// jobUIDLabels are the labels the apiserver puts on a Job's selector and
// pod template with the Job's UID.
var jobUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

func sanitizeJob(obj *unstructured.Unstructured) {
	// A member's TTL controller would delete the finished copy, which the
	// federation would then recreate and run again.
	unstructured.RemoveNestedField(obj.Object, "spec", "ttlSecondsAfterFinished")
	if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "selector")
	// A Job created without labels gets its pod template's, UID included.
	if own := obj.GetLabels(); own != nil {
		for _, l := range jobUIDLabels {
			delete(own, l)
		}
		if len(own) == 0 {
			own = nil
		}
		obj.SetLabels(own)
	}
	labels, found, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
	if !found {
		return
	}
	for _, l := range jobUIDLabels {
		delete(labels, l)
	}
	_ = unstructured.SetNestedStringMap(obj.Object, labels, "spec", "template", "metadata", "labels")
}
