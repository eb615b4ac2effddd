// Package nodefit is node-level simulated placement: given one replica's
// pod (its requests, tolerations, node selector and required node
// affinity), it says which of a member's nodes may run it and how many
// replicas fit on each in what is left free. The member package keeps the
// nodes; the scheduler asks it per decision. It is pure: no clients, no
// locks.
package nodefit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Request is one requested resource in Amount's units.
type Request struct {
	// Name of the resource.
	Name corev1.ResourceName
	// Amount per replica.
	Amount int64
}

// Shape is one replica's pod as placement on nodes sees it. Build it with
// NewShape; the zero Shape fits anywhere a pod may go.
type Shape struct {
	// Requests are the positive requests in name order; every replica
	// also takes one pod slot.
	Requests []Request
	// Key identifies the shape (requests and constraints): equal keys give
	// equal estimates on the same nodes.
	Key string
	// ConstraintsKey identifies the constraints alone (which nodes are
	// eligible, whatever is free on them).
	ConstraintsKey string
	// Constrained says the pod has tolerations, a node selector or a
	// required node affinity.
	Constrained bool

	tolerations []corev1.Toleration
	affinity    nodeaffinity.RequiredNodeAffinity
	slots       []int // Vector slot of each request
}

// index finds the requests' Vector slots (for a Shape built by hand).
func (s *Shape) index() {
	s.slots = make([]int, len(s.Requests))
	for i, r := range s.Requests {
		s.slots[i] = slot(r.Name)
	}
}

// NewShape compiles a pod spec: the requests as the kube-scheduler counts
// them (containers, init containers, overhead), its tolerations, node
// selector and required node affinity.
func NewShape(spec *corev1.PodSpec) *Shape {
	pod := &corev1.Pod{Spec: *spec}
	s := &Shape{tolerations: spec.Tolerations, affinity: nodeaffinity.GetRequiredNodeAffinity(pod)}
	for name, q := range TemplateRequests(spec) {
		if v := Amount(name, q); v > 0 && name != corev1.ResourcePods {
			s.Requests = append(s.Requests, Request{Name: name, Amount: v})
		}
	}
	slices.SortFunc(s.Requests, func(a, b Request) int { return cmp.Compare(a.Name, b.Name) })
	s.index()
	var required *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	s.Constrained = len(spec.Tolerations) > 0 || len(spec.NodeSelector) > 0 || required != nil
	s.ConstraintsKey = hash(struct {
		T []corev1.Toleration
		S map[string]string
		A *corev1.NodeSelector
	}{spec.Tolerations, spec.NodeSelector, required})
	s.Key = hash(struct {
		C string
		R []Request
	}{s.ConstraintsKey, s.Requests})
	return s
}

// TemplateRequests returns the requests of one pod made from a template's
// spec, as the kube-scheduler counts them (containers, init containers,
// pod-level resources, overhead). A container gets a request for each
// resource it only limits, equal to the limit, when its pod is created,
// and a pod with pod-level limits gets pod-level requests
// (podLevelRequests); a template does not (the API server defaults pods,
// not templates), so that is done here: otherwise a template that sets
// limits alone would seem to request nothing. spec is not modified.
func TemplateRequests(spec *corev1.PodSpec) corev1.ResourceList {
	pod := &corev1.Pod{Spec: *spec}
	pod.Spec.Containers = withLimitDefaults(spec.Containers)
	pod.Spec.InitContainers = withLimitDefaults(spec.InitContainers)
	if r := spec.Resources; r != nil && len(r.Limits) > 0 {
		pod.Spec.Resources = &corev1.ResourceRequirements{Limits: r.Limits, Requests: podLevelRequests(pod, r)}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// podLevelRequests defaults a pod's own requests as the API server does
// when the pod sets pod-level limits, for the resources pod-level
// requirements support: a resource the pod does not request itself is
// requested at what its containers request together if it may be
// overcommitted (cpu, memory; not hugepages), else, or when no container
// requests it, at the pod's limit. pod's containers are already defaulted.
func podLevelRequests(pod *corev1.Pod, r *corev1.ResourceRequirements) corev1.ResourceList {
	out := maps.Clone(r.Requests)
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		_, set := out[name]
		hugePages := strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
		if !set && !hugePages && resourcehelper.IsSupportedPodLevelResource(name) {
			out[name] = q
		}
	}
	for name, q := range r.Limits {
		if _, set := out[name]; !set && resourcehelper.IsSupportedPodLevelResource(name) {
			out[name] = q
		}
	}
	return out
}

// withLimitDefaults returns cs, copied where a container limits a
// resource it does not request, with the request set to the limit.
func withLimitDefaults(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i := range cs {
		r := &cs[i].Resources
		if !limitsOnly(r) {
			continue
		}
		if out == nil {
			out = slices.Clone(cs)
		}
		out[i].Resources = corev1.ResourceRequirements{Limits: r.Limits, Requests: requestsOrLimits(r), Claims: r.Claims}
	}
	if out == nil {
		return cs
	}
	return out
}

// limitsOnly reports whether r limits a resource it does not request.
func limitsOnly(r *corev1.ResourceRequirements) bool {
	for name := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			return true
		}
	}
	return false
}

// requestsOrLimits returns r's requests with each resource only limited
// requested at its limit.
func requestsOrLimits(r *corev1.ResourceRequirements) corev1.ResourceList {
	out := make(corev1.ResourceList, len(r.Limits)+len(r.Requests))
	maps.Copy(out, r.Limits)
	maps.Copy(out, r.Requests)
	return out
}

func hash(v any) string {
	b, _ := json.Marshal(v) // plain structs of API types: cannot fail
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}

// Binary reports whether a resource is counted in bytes (memory-like)
// rather than milli-units.
func Binary(name corev1.ResourceName) bool {
	return name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || name == corev1.ResourceStorage ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// MaxAmount is the largest Amount: 2^53 bytes (8 PiB) or milli-units
// (about 9 billion cores). Larger quantities count as this much, so sums
// over nodes, pods and replicas stay far from int64's limit.
const MaxAmount = int64(1) << 53

// Amount is q as an integer: bytes for memory-like resources, milli-units
// for the rest (cpu in millicores, pods and extended resources in
// thousandths), at most MaxAmount in magnitude.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if Binary(name) {
		if q.CmpInt64(MaxAmount) > 0 {
			return MaxAmount
		}
		if q.CmpInt64(-MaxAmount) < 0 {
			return -MaxAmount
		}
		return q.Value()
	}
	if q.CmpInt64(MaxAmount/1000) > 0 {
		return MaxAmount
	}
	if q.CmpInt64(-MaxAmount/1000) < 0 {
		return -MaxAmount
	}
	return q.MilliValue()
}

// Quantity turns an Amount back into a quantity in the format kubectl
// users expect.
func Quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch {
	case name == corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case Binary(name):
		return *resource.NewQuantity(v, resource.BinarySI)
	default:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
}

// Eligible reports whether a replica may go to node at all, whatever is
// free there: the node is Ready and not cordoned, every NoSchedule and
// NoExecute taint is tolerated, and the node selector and required node
// affinity match.
func (s *Shape) Eligible(node *corev1.Node) bool {
	if node == nil || node.Spec.Unschedulable || !Ready(node) {
		return false
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range s.tolerations {
			if s.tolerations[j].ToleratesTaint(klog.Background(), t, true) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false
		}
	}
	ok, err := s.affinity.Match(node)
	return ok && err == nil
}

// Ready reports whether a node's Ready condition is True.
func Ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
