package workload

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// podShape says where a kind whose replicas application failover can move
// keeps its pod selector and its pod counts.
type podShape struct {
	// selector is the path of the metav1.LabelSelector of the kind's pods.
	selector []string
	// ready is the path of the count of ready pods in the status.
	ready []string
	// pods is the path of the count of pods that exist in the status.
	pods []string
	// observed is the path of the status's observed generation.
	observed []string
}

// replicaSetShape is the shape the apps kinds share.
var replicaSetShape = podShape{
	selector: []string{"spec", "selector"},
	ready:    []string{"status", "readyReplicas"},
	pods:     []string{"status", "replicas"},
	observed: []string{"status", "observedGeneration"},
}

// migratableKinds are the kinds application failover supports, keyed by
// group and kind (every version shares the shape). Supporting another kind
// takes one entry.
var migratableKinds = map[schema.GroupKind]podShape{
	{Group: "apps", Kind: "Deployment"}:       replicaSetShape,
	{Group: "apps", Kind: "StatefulSet"}:      replicaSetShape,
	{Group: "apps", Kind: "ReplicaSet"}:       replicaSetShape,
	{Group: "extensions", Kind: "Deployment"}: replicaSetShape,
	{Group: "extensions", Kind: "ReplicaSet"}: replicaSetShape,
}

// shapeOf returns the shape of obj's kind, false for a kind failover does
// not support.
func shapeOf(obj *unstructured.Unstructured) (podShape, bool) {
	if obj == nil {
		return podShape{}, false
	}
	shape, ok := migratableKinds[obj.GroupVersionKind().GroupKind()]
	return shape, ok
}

// Migratable reports whether application failover can move obj's replicas
// between members: whether it knows the kind's pod selector and counts.
func Migratable(obj *unstructured.Unstructured) bool {
	if _, ok := shapeOf(obj); ok {
		return true
	}
	in := interpreterOf(obj)
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
	if _, ok := migratableKinds[kind]; ok {
		out = append(out, PodOwner{GroupKind: kind, Name: name})
	} else if in := Interpreters.Get(kind); in != nil && in.Migratable() {
		out = append(out, PodOwner{GroupKind: kind, Name: name})
	}
	deployment := schema.GroupKind{Group: kind.Group, Kind: "Deployment"}
	if _, ok := migratableKinds[deployment]; ok && kind.Kind == "ReplicaSet" {
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
	shape, ok := shapeOf(obj)
	if !ok {
		if in := interpreterOf(obj); in != nil && in.Migratable() {
			return in.Selector(obj)
		}
		return nil, false
	}
	m, found, err := unstructured.NestedMap(obj.Object, shape.selector...)
	if !found || err != nil {
		return nil, false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, false
	}
	selector, err = metav1.LabelSelectorAsSelector(&ls)
	if err != nil || selector.Empty() {
		return nil, false
	}
	return selector, true
}

// ReadyReplicas returns the number of ready pods of a member's live copy
// of obj. ok is false for a kind that is not Migratable and until the
// member's controller has observed the copy's generation, since the count
// may describe an older spec until then. A status without the field counts
// zero ready pods.
func ReadyReplicas(obj *unstructured.Unstructured) (ready int32, ok bool) {
	if in := interpreterOf(obj); in != nil && in.Migratable() {
		n, ok, _ := in.ReadyReplicas(obj) // a failing expression: not known
		return n, ok
	}
	return statusCount(obj, func(s podShape) []string { return s.ready })
}

// PodCount returns the number of pods that exist for a member's live copy
// of obj (status.replicas of the native kinds), whether ready or not, with
// ReadyReplicas' rules for ok.
func PodCount(obj *unstructured.Unstructured) (pods int32, ok bool) {
	if in := interpreterOf(obj); in != nil && in.Migratable() {
		n, ok, _ := in.Pods(obj) // a failing expression: not known
		return n, ok
	}
	return statusCount(obj, func(s podShape) []string { return s.pods })
}

// statusCount reads the count at the path field picks from the shape of
// obj's kind, when the status is current.
func statusCount(obj *unstructured.Unstructured, field func(podShape) []string) (int32, bool) {
	shape, ok := shapeOf(obj)
	if !ok {
		return 0, false
	}
	observed, found, err := unstructured.NestedInt64(obj.Object, shape.observed...)
	if !found || err != nil || observed < obj.GetGeneration() {
		return 0, false
	}
	n, found, err := unstructured.NestedInt64(obj.Object, field(shape)...)
	switch {
	case err != nil || n < 0:
		return 0, false
	case !found:
		return 0, true
	}
	return int32(n), true
}
