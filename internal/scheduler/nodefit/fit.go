package nodefit

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodAmount is one pod slot in Amount's units (pods count in thousandths).
const PodAmount = 1000

// Vector holds amounts of resources: the common ones in fields (they are
// read for every node of every estimate), the rest in Other.
type Vector struct {
	CPU, Memory, Ephemeral, Pods int64
	Other                        map[corev1.ResourceName]int64
}

// Slots of the resources Vector holds in fields; -1 for the rest.
const (
	slotCPU = iota
	slotMemory
	slotEphemeral
	slotPods
	slotOther = -1
)

func slot(name corev1.ResourceName) int {
	switch name {
	case corev1.ResourceCPU:
		return slotCPU
	case corev1.ResourceMemory:
		return slotMemory
	case corev1.ResourceEphemeralStorage:
		return slotEphemeral
	case corev1.ResourcePods:
		return slotPods
	}
	return slotOther
}

// at returns the amount in a slot (name for slotOther).
func (v *Vector) at(slot int, name corev1.ResourceName) int64 {
	switch slot {
	case slotCPU:
		return v.CPU
	case slotMemory:
		return v.Memory
	case slotEphemeral:
		return v.Ephemeral
	case slotPods:
		return v.Pods
	}
	return v.Other[name]
}

// Get returns the amount of a resource.
func (v *Vector) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return v.CPU
	case corev1.ResourceMemory:
		return v.Memory
	case corev1.ResourceEphemeralStorage:
		return v.Ephemeral
	case corev1.ResourcePods:
		return v.Pods
	}
	return v.Other[name]
}

// Add adds amount (which may be negative) to a resource.
func (v *Vector) Add(name corev1.ResourceName, amount int64) {
	switch name {
	case corev1.ResourceCPU:
		v.CPU += amount
	case corev1.ResourceMemory:
		v.Memory += amount
	case corev1.ResourceEphemeralStorage:
		v.Ephemeral += amount
	case corev1.ResourcePods:
		v.Pods += amount
	default:
		if v.Other == nil {
			v.Other = map[corev1.ResourceName]int64{}
		}
		v.Other[name] += amount
		if v.Other[name] == 0 {
			delete(v.Other, name)
		}
	}
}

// Equal reports whether two vectors hold the same amounts.
func (v *Vector) Equal(o *Vector) bool {
	if v.CPU != o.CPU || v.Memory != o.Memory || v.Ephemeral != o.Ephemeral || v.Pods != o.Pods || len(v.Other) != len(o.Other) {
		return false
	}
	for name, a := range v.Other {
		if b, ok := o.Other[name]; !ok || a != b {
			return false
		}
	}
	return true
}

// Node is a node as the estimate sees it.
type Node struct {
	// Object carries the labels, taints, cordon and Ready condition.
	Object *corev1.Node
	// Alloc is the node's allocatable resources; Used sums the requests of
	// the pods bound to it, and a pod slot per pod.
	Alloc, Used Vector
}

// Count returns how many more replicas of s fit in what n has free,
// eligibility aside.
func (s *Shape) Count(n *Node) int64 {
	if len(s.slots) != len(s.Requests) {
		s.index()
	}
	fit := (n.Alloc.Pods - n.Used.Pods) / PodAmount
	for i, r := range s.Requests {
		if fit <= 0 {
			return 0
		}
		sl := s.slots[i]
		fit = min(fit, (n.Alloc.at(sl, r.Name)-n.Used.at(sl, r.Name))/r.Amount)
	}
	return max(fit, 0)
}

// Result is a member's simulated room for a shape.
type Result struct {
	// Replicas is how many more replicas fit, summed over eligible nodes,
	// each node filled with as many as its free resources hold.
	Replicas int64
	// Nodes is how many nodes are eligible; Total how many there are (not
	// counting nodes known only from the pods bound to them).
	Nodes, Total int
	// Largest is, per requested resource, the most any one eligible node
	// has free (in the shape's request order).
	Largest []Request
	// FreePods is the free pod slots over the eligible nodes.
	FreePods int64
}

// Estimate places replicas of s on nodes: eligible[i] says whether
// nodes[i] may run one (from Eligible, cached by the caller; nil: ask
// Eligible). It is a fresh count, as NewTally makes.
func Estimate(s *Shape, nodes []*Node, eligible []bool) Result {
	if eligible == nil {
		eligible = make([]bool, len(nodes))
		for i, n := range nodes {
			eligible[i] = s.Eligible(n.Object)
		}
	}
	return NewTally(s, nodes, eligible).Result
}

// Explain says what limits the room, for a decision's message: "no node
// matches the pod's tolerations, node selector and affinity (of 12)" or
// "most free on one node: cpu 2, memory 3Gi".
func (r Result) Explain() string {
	if r.Nodes == 0 {
		return fmt.Sprintf("none of %d nodes matches the pod's tolerations, node selector and affinity", r.Total)
	}
	parts := make([]string, 0, len(r.Largest))
	for _, l := range r.Largest {
		q := Quantity(l.Name, max(l.Amount, 0))
		parts = append(parts, string(l.Name)+" "+q.String())
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d eligible nodes are out of pod slots", r.Nodes)
	}
	return "most free on one node: " + strings.Join(parts, ", ")
}
