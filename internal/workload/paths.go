package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// podKind is v1 Pod, the one kind that is its own pod template.
var podKind = schema.GroupKind{Kind: "Pod"}

// PodSpecPath returns the path of the pod spec in objects of a kind: its
// interpreter's pod template (built-in or WorkloadInterpreter), spec for a
// Pod. For a kind without an interpreter it returns spec.template.spec
// when obj has one there (the common shape of workload CRDs), else nil.
func PodSpecPath(obj *unstructured.Unstructured) []string {
	gk := obj.GroupVersionKind().GroupKind()
	if gk == podKind {
		return []string{"spec"}
	}
	if in := interpreterFor(gk); in != nil {
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

// Replicas returns an object's desired replicas: what its kind's
// interpreter says (built-in: spec.replicas of Deployments, StatefulSets,
// ReplicaSets and ReplicationControllers, 1 when absent, the API default;
// a Job's spec.completions when set, its work to divide; none for the
// other native kinds), or an integer spec.replicas of a
// custom kind without an interpreter. ok is false when the object has no
// replicas to split.
func Replicas(obj *unstructured.Unstructured) (replicas int32, ok bool) {
	gk := obj.GroupVersionKind().GroupKind()
	if gk == jobKind {
		return jobCompletions(obj)
	}
	if in := interpreterFor(gk); in != nil {
		return in.Replicas(obj)
	}
	if gk.Group == "" || isNativeGroup(gk.Group) {
		return 0, false
	}
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if found && err == nil {
		return int32(n), true
	}
	return 0, false
}

// SetReplicas sets the object's replicas (at its interpreter's path, else
// spec.replicas; for a Job its completions and a matching share of its
// parallelism); it fails when the path does not lead through objects.
func SetReplicas(obj *unstructured.Unstructured, n int32) error {
	if obj.GroupVersionKind().GroupKind() == jobKind {
		return setJobCompletions(obj, n)
	}
	if in := interpreterOf(obj); in != nil && in.HasReplicas() {
		return in.SetReplicas(obj, n)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(n), "spec", "replicas"); err != nil {
		return fmt.Errorf("set spec.replicas: %w", err)
	}
	return nil
}

// ReplicasPath is the path of obj's replica count: its interpreter's,
// else spec.replicas.
func ReplicasPath(obj *unstructured.Unstructured) []string {
	if obj.GroupVersionKind().GroupKind() == jobKind {
		return []string{"spec", "completions"}
	}
	if in := interpreterOf(obj); in != nil && in.HasReplicas() {
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

// isNativeGroup reports whether a group is one of Kubernetes' own (k8s.io
// groups and the unsuffixed ones such as apps and batch).
func isNativeGroup(group string) bool {
	switch group {
	case "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "certificates.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io", "storagemigration.k8s.io":
		return true
	}
	return false
}
