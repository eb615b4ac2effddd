package workload

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Migratable reports whether application failover can move obj's replicas
// between members: whether its kind's interpreter knows its replicas, pod
// selector and pod counts (built-in: Deployments, StatefulSets and
// ReplicaSets).
func Migratable(obj *unstructured.Unstructured) bool {
	in := interpreterOf(obj)
	return in != nil && in.Migratable()
}

// migratableKind reports whether a kind is Migratable.
func migratableKind(gk schema.GroupKind) bool {
	in := interpreterFor(gk)
	return in != nil && in.Migratable()
}

// PodOwner names a Migratable workload.
type PodOwner struct {
	schema.GroupKind
	// Name is the workload's name (in the pod's namespace).
	Name string
}

// PodOwners returns the Migratable workloads that may own a pod whose
// controller is the object kind/name: that object when its kind is
// Migratable, and when it is a ReplicaSet whose name is a Deployment's
// plus "-" and the pod's pod-template-hash label (how the Deployment
// controller names them), that Deployment. Some of them may not exist.
func PodOwners(kind schema.GroupKind, name string, podLabels map[string]string) []PodOwner {
	if name == "" {
		return nil
	}
	var out []PodOwner
	if migratableKind(kind) {
		out = append(out, PodOwner{GroupKind: kind, Name: name})
	}
	deployment := schema.GroupKind{Group: kind.Group, Kind: "Deployment"}
	if kind.Kind == "ReplicaSet" && migratableKind(deployment) {
		hash := podLabels[appsv1.DefaultDeploymentUniqueLabelKey]
		if trimmed, ok := strings.CutSuffix(name, "-"+hash); ok && hash != "" && trimmed != "" {
			out = append(out, PodOwner{GroupKind: deployment, Name: trimmed})
		}
	}
	return out
}

// PodSelector returns the selector of obj's pods. ok is false for a kind
// that is not Migratable and for a selector that is missing, invalid or
// empty (an empty selector would match every pod in the namespace).
func PodSelector(obj *unstructured.Unstructured) (selector labels.Selector, ok bool) {
	in := interpreterOf(obj)
	if in == nil || !in.Migratable() {
		return nil, false
	}
	return in.Selector(obj)
}

// ReadyReplicas returns the number of ready pods of a member's live copy
// of obj. ok is false for a kind that is not Migratable and until the
// member's controller has observed the copy's generation, since the count
// may describe an older spec until then. A status without the field counts
// zero ready pods.
func ReadyReplicas(obj *unstructured.Unstructured) (ready int32, ok bool) {
	in := interpreterOf(obj)
	if in == nil || !in.Migratable() {
		return 0, false
	}
	n, ok, _ := in.ReadyReplicas(obj) // a failing expression: not known
	return n, ok
}

// PodCount returns the number of pods that exist for a member's live copy
// of obj (status.replicas of the native kinds), whether ready or not, with
// ReadyReplicas' rules for ok.
func PodCount(obj *unstructured.Unstructured) (pods int32, ok bool) {
	in := interpreterOf(obj)
	if in == nil || !in.Migratable() {
		return 0, false
	}
	n, ok, _ := in.Pods(obj) // a failing expression: not known
	return n, ok
}

// JudgesReadiness reports whether obj's kind has a health.ready
// expression (a WorkloadInterpreter's): graceful eviction then waits for
// the copies in the new clusters to be Ready when it cannot count ready
// replicas.
func JudgesReadiness(obj *unstructured.Unstructured) bool {
	in := interpreterOf(obj)
	return in != nil && in.JudgesReadiness()
}

// Ready reports whether a member's copy is Ready by its kind's health.ready
// expression; false when it is not, cannot say, or fails.
func Ready(obj *unstructured.Unstructured) bool {
	in := interpreterOf(obj)
	if in == nil {
		return false
	}
	h, _ := in.Health(obj)
	return h.Ready != nil && *h.Ready
}
