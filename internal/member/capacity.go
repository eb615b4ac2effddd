package member

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Capacity keeps running totals of a member's node allocatable resources
// and pod requests, updated per informer event in O(resources), so that a
// summary costs O(nodes) however many pods run. Values are held in
// milli-units, memory-like resources in bytes (in milli-bytes the totals
// would overflow int64 past 8 PiB). Capacity is not safe for concurrent use.
type Capacity struct {
	nodes map[string]*nodeUsage
	pods  map[string]podUsage // by namespace/name
}

type nodeUsage struct {
	known       bool // the node itself was seen (not only pods bound to it)
	schedulable bool
	allocatable map[corev1.ResourceName]int64
	requested   map[corev1.ResourceName]int64
	pods        int64
}

type podUsage struct {
	node     string
	requests map[corev1.ResourceName]int64
}

// Summary is a member's node count and resource totals.
type Summary struct {
	// Nodes is the number of nodes.
	Nodes int32
	// SchedulableNodes is the number of schedulable nodes.
	SchedulableNodes int32
	// Allocatable sums the schedulable nodes' allocatable resources.
	Allocatable corev1.ResourceList
	// Available is Allocatable minus the requests of the pods bound to those
	// nodes, per node never below zero; "pods" counts pods.
	Available corev1.ResourceList
}

// NewCapacity returns empty totals.
func NewCapacity() *Capacity {
	return &Capacity{nodes: map[string]*nodeUsage{}, pods: map[string]podUsage{}}
}

// SetNode records a node's allocatable resources and schedulability.
func (c *Capacity) SetNode(node *corev1.Node) {
	u := c.node(node.Name)
	u.known = true
	u.schedulable = Schedulable(node)
	u.allocatable = milli(node.Status.Allocatable)
}

// DeleteNode forgets a node; pods still bound to it keep their usage until
// they are deleted.
func (c *Capacity) DeleteNode(name string) {
	u, ok := c.nodes[name]
	if !ok {
		return
	}
	if u.pods == 0 {
		delete(c.nodes, name)
		return
	}
	u.known, u.schedulable, u.allocatable = false, false, nil
}

// SetPod records the requests of a pod that counts against its node: bound
// and not terminated. Other pods are removed.
func (c *Capacity) SetPod(key string, pod *corev1.Pod) {
	c.setUsage(key, pod.Spec.NodeName, pod.Status.Phase, milli(PodRequests(pod)))
}

// setUsage records a pod's requests in milli-units (bytes for memory-like
// resources), the form the pod cache keeps. requests is not modified.
func (c *Capacity) setUsage(key, node string, phase corev1.PodPhase, requests map[corev1.ResourceName]int64) {
	c.DeletePod(key)
	if node == "" || phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		return
	}
	c.pods[key] = podUsage{node: node, requests: requests}
	u := c.node(node)
	u.pods++
	for name, v := range requests {
		u.requested[name] += v
	}
}

// DeletePod removes a pod's usage.
func (c *Capacity) DeletePod(key string) {
	p, ok := c.pods[key]
	if !ok {
		return
	}
	delete(c.pods, key)
	u := c.nodes[p.node]
	u.pods--
	for name, v := range p.requests {
		u.requested[name] -= v
		if u.requested[name] == 0 {
			delete(u.requested, name)
		}
	}
	if !u.known && u.pods == 0 {
		delete(c.nodes, p.node)
	}
}

// Summary sums the totals over the schedulable nodes.
func (c *Capacity) Summary() Summary {
	s := Summary{}
	alloc := map[corev1.ResourceName]int64{}
	avail := map[corev1.ResourceName]int64{}
	for _, u := range c.nodes {
		if !u.known {
			continue
		}
		s.Nodes++
		if !u.schedulable {
			continue
		}
		s.SchedulableNodes++
		for name, a := range u.allocatable {
			used := u.requested[name]
			if name == corev1.ResourcePods {
				used = u.pods * 1000
			}
			alloc[name] += a
			avail[name] += max(0, a-used)
		}
	}
	s.Allocatable, s.Available = quantities(alloc), quantities(avail)
	return s
}

func (c *Capacity) node(name string) *nodeUsage {
	u, ok := c.nodes[name]
	if !ok {
		u = &nodeUsage{requested: map[corev1.ResourceName]int64{}}
		c.nodes[name] = u
	}
	return u
}

// Schedulable reports whether new pods can land on a node: Ready, not
// cordoned, and without NoSchedule or NoExecute taints.
func Schedulable(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func milli(list corev1.ResourceList) map[corev1.ResourceName]int64 {
	m := make(map[corev1.ResourceName]int64, len(list))
	for name, q := range list {
		if binaryResource(name) {
			m[name] = q.Value()
		} else {
			m[name] = q.MilliValue()
		}
	}
	return m
}

// quantities converts milli-unit totals back to quantities in the format
// kubectl users expect: cpu in cores or millicores, memory-like resources in
// binary units, counts as plain numbers.
func quantities(m map[corev1.ResourceName]int64) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	list := make(corev1.ResourceList, len(m))
	for name, v := range m {
		switch {
		case name == corev1.ResourceCPU:
			list[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		case binaryResource(name):
			list[name] = *resource.NewQuantity(v, resource.BinarySI)
		default:
			list[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		}
	}
	return list
}

func binaryResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || name == corev1.ResourceStorage ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
