package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// podSpecPaths are where the pod spec of the native kinds lives.
var podSpecPaths = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:        {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}:       {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:         {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:              {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:          {"spec", "jobTemplate", "spec", "template", "spec"},
	{Group: "", Kind: "Pod"}:                   {"spec"},
	{Group: "", Kind: "ReplicationController"}: {"spec", "template", "spec"},
}

// PodSpecPath returns the path of the pod spec in objects of a kind. For a
// kind it does not know it returns spec.template.spec when obj has one
// there (the common shape of workload CRDs), else nil.
func PodSpecPath(obj *unstructured.Unstructured) []string {
	gk := obj.GroupVersionKind().GroupKind()
	if p, ok := podSpecPaths[gk]; ok {
		return p
	}
	if in := Interpreters.Get(gk); in != nil {
		return in.PodSpecPath()
	}
	generic := []string{"spec", "template", "spec"}
	if m, ok, _ := unstructured.NestedMap(obj.Object, generic...); ok && m != nil {
		if _, has := m["containers"]; has {
			return generic
		}
	}
	return nil
}

// replicatedKinds are the native kinds whose spec.replicas is a replica
// count Divide splits.
var replicatedKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:        true,
	{Group: "apps", Kind: "StatefulSet"}:       true,
	{Group: "apps", Kind: "ReplicaSet"}:        true,
	{Group: "", Kind: "ReplicationController"}: true,
}

// Replicas returns an object's desired replicas: spec.replicas of the
// replicated native kinds, what the WorkloadInterpreter of a kind that has
// one says, or an integer spec.replicas of any other kind except the
// native kinds that have none. ok is false when the object has no
// replicas to split. A replicated kind without spec.replicas has 1 (the
// API default).
func Replicas(obj *unstructured.Unstructured) (replicas int32, ok bool) {
	gk := obj.GroupVersionKind().GroupKind()
	if in := Interpreters.Get(gk); in != nil && !replicatedKinds[gk] {
		return in.Replicas(obj)
	}
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	switch {
	case replicatedKinds[gk] && !found:
		return 1, true
	case replicatedKinds[gk] && err == nil:
		return int32(n), true
	case gk.Group == "" || isNativeGroup(gk.Group):
		return 0, false
	case found && err == nil:
		return int32(n), true
	}
	return 0, false
}

// SetReplicas sets the object's replicas (spec.replicas, or the path of
// its kind's WorkloadInterpreter); it fails when the path does not lead
// through objects.
func SetReplicas(obj *unstructured.Unstructured, n int32) error {
	if in := interpreterOf(obj); in != nil && !replicatedKinds[obj.GroupVersionKind().GroupKind()] {
		return in.SetReplicas(obj, n)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(n), "spec", "replicas"); err != nil {
		return fmt.Errorf("set spec.replicas: %w", err)
	}
	return nil
}

// isNativeGroup reports whether a group is one of Kubernetes' own (k8s.io
// groups and the unsuffixed ones such as apps and batch).
func isNativeGroup(group string) bool {
	switch group {
	case "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "certificates.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io", "storagemigration.k8s.io":
		return true
	}
	return false
}

// ReplicasPath is the path of obj's replica count: its kind's
// WorkloadInterpreter's, else spec.replicas.
func ReplicasPath(obj *unstructured.Unstructured) []string {
	if in := interpreterOf(obj); in != nil && in.HasReplicas() && !replicatedKinds[obj.GroupVersionKind().GroupKind()] {
		return in.ReplicasPath()
	}
	return []string{"spec", "replicas"}
}

// Retained lists the fields of obj's kind a member owns (its
// WorkloadInterpreter's retain list): copies keep the member's values.
func Retained(obj *unstructured.Unstructured) [][]string {
	if in := interpreterOf(obj); in != nil {
		return in.Retain()
	}
	return nil
}
