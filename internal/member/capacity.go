package member

import (
	"maps"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// Capacity keeps running totals of a member's node allocatable resources
// and pod requests, updated per informer event in O(resources), so that a
// summary costs O(nodes) however many pods run. Values are held in
// milli-units, memory-like resources in bytes (in milli-bytes the totals
// would overflow int64 past 8 PiB). It also answers node-level estimates
// (Fit) and counts each workload's bound pods (Bound) for the scheduler.
// Capacity is not safe for concurrent use.
type Capacity struct {
	nodes map[string]*nodeUsage
	pods  map[string]podUsage // by namespace/name
	// order lists the nodes for estimates; nodeUsage.index is a node's
	// position in it and in fitNodes, which points at each one's fit.
	order    []*nodeUsage
	fitNodes []*nodefit.Node
	// bound counts the bound pods of each workload, by WorkloadKey.
	bound map[string]int32
	// version changes with every change; nodesVersion with every change
	// of a node itself (not of its pods). They key the estimate caches.
	version, nodesVersion uint64
	fits                  map[string]*cachedFit     // by nodefit.Shape.Key
	eligible              map[string]cachedEligible // by nodefit.Shape.ConstraintsKey
	// changes is a ring of the last pod changes (changeLog of them);
	// head is where the next one goes.
	changes []change
	head    int
}

type nodeUsage struct {
	known       bool // the node itself was seen (not only pods bound to it)
	schedulable bool
	allocatable map[corev1.ResourceName]int64
	requested   map[corev1.ResourceName]int64
	pods        int64
	fit         nodefit.Node // the same, for estimates
	index       int
}

type podUsage struct {
	node     string
	workload string
	requests map[corev1.ResourceName]int64
}

type cachedFit struct {
	version, nodesVersion uint64
	tally                 *nodefit.Tally
}

// change is a pod change on a node: version is Capacity.version after it.
type change struct {
	version uint64
	node    int
}

// changeLog is how many pod changes Capacity remembers, so that a cached
// estimate up to that many changes old is brought up to date node by node.
const changeLog = 1024

type cachedEligible struct {
	version  uint64
	eligible []bool
}

// maxCachedShapes bounds each estimate cache; a full cache starts over.
// A cached estimate keeps 8 bytes per node: 256 shapes of a member of
// 1,000 nodes take 2 MB.
const maxCachedShapes = 256

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
	// Versions start apart per Capacity, so that one from a member's new
	// session never equals one a reader kept from the old.
	return &Capacity{nodes: map[string]*nodeUsage{}, pods: map[string]podUsage{}, bound: map[string]int32{},
		version: capacities.Add(1) << 40}
}

// capacities counts the Capacity values made.
var capacities atomic.Uint64

// SetNode records a node's allocatable resources and schedulability.
func (c *Capacity) SetNode(node *corev1.Node) {
	u := c.node(node.Name)
	alloc := milli(node.Status.Allocatable)
	if u.known && maps.Equal(u.allocatable, alloc) && sameForEstimates(u.fit.Object, node) {
		u.fit.Object = node // a heartbeat or status update: nothing counted changed
		return
	}
	u.known = true
	u.schedulable = Schedulable(node)
	u.allocatable = alloc
	u.fit.Object = node
	u.fit.Alloc = nodefit.Vector{}
	for name, v := range u.allocatable {
		u.fit.Alloc.Add(name, v)
	}
	c.version++
	c.nodesVersion++
}

// DeleteNode forgets a node; pods still bound to it keep their usage until
// they are deleted.
func (c *Capacity) DeleteNode(name string) {
	u, ok := c.nodes[name]
	if !ok {
		return
	}
	c.version++
	c.nodesVersion++
	if u.pods == 0 {
		c.remove(name)
		return
	}
	u.known, u.schedulable, u.allocatable = false, false, nil
	u.fit.Object, u.fit.Alloc = nil, nodefit.Vector{}
}

// SetPod records the requests of a pod that counts against its node: bound
// and not terminated. Other pods are removed.
func (c *Capacity) SetPod(key string, pod *corev1.Pod) {
	c.setUsage(key, pod.Spec.NodeName, boundWorkload(pod), pod.Status.Phase, milli(PodRequests(pod)))
}

// setUsage records a pod's requests in milli-units (bytes for memory-like
// resources), the form the pod cache keeps, and the workload (WorkloadKey)
// it counts for in Bound ("" for none). requests is not modified.
func (c *Capacity) setUsage(key, node, workload string, phase corev1.PodPhase, requests map[corev1.ResourceName]int64) {
	if p, ok := c.pods[key]; ok && p.node == node && p.workload == workload && maps.Equal(p.requests, requests) &&
		phase != corev1.PodSucceeded && phase != corev1.PodFailed {
		return // a status change: nothing the totals count changed
	}
	c.DeletePod(key)
	if node == "" || phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		return
	}
	c.pods[key] = podUsage{node: node, workload: workload, requests: requests}
	if workload != "" {
		c.bound[workload]++
	}
	u := c.node(node)
	c.logChange(u)
	u.pods++
	u.fit.Used.Pods += nodefit.PodAmount
	for name, v := range requests {
		u.requested[name] += v
		u.fit.Used.Add(name, v)
	}
}

// DeletePod removes a pod's usage.
func (c *Capacity) DeletePod(key string) {
	p, ok := c.pods[key]
	if !ok {
		return
	}
	delete(c.pods, key)
	if p.workload != "" {
		if c.bound[p.workload]--; c.bound[p.workload] <= 0 {
			delete(c.bound, p.workload)
		}
	}
	u := c.nodes[p.node]
	c.logChange(u)
	u.pods--
	u.fit.Used.Pods -= nodefit.PodAmount
	for name, v := range p.requests {
		u.requested[name] -= v
		u.fit.Used.Add(name, -v)
		if u.requested[name] == 0 {
			delete(u.requested, name)
		}
	}
	if !u.known && u.pods == 0 {
		c.remove(p.node)
	}
}

// Version identifies the state: it changes with every change of a node or
// a pod's usage (never 0 once anything was recorded).
func (c *Capacity) Version() uint64 { return c.version }

// Bound returns how many pods of a workload (its WorkloadKey) are bound to
// nodes, not terminated and not being deleted. A pod being deleted still
// holds its node's resources, but it is no replica the workload will keep.
func (c *Capacity) Bound(workload string) int32 { return c.bound[workload] }

// Fit estimates how many more replicas of s the member's nodes hold, each
// node filled with what its free resources take. Results are cached per
// shape until anything changes; which nodes are eligible is cached per
// set of constraints until a node changes.
func (c *Capacity) Fit(s *nodefit.Shape) nodefit.Result {
	f, ok := c.fits[s.Key]
	if ok && f.version == c.version {
		return f.tally.Result
	}
	e, eok := c.eligible[s.ConstraintsKey]
	if !eok || e.version != c.nodesVersion {
		e = cachedEligible{version: c.nodesVersion, eligible: make([]bool, len(c.order))}
		for i, u := range c.order {
			e.eligible[i] = u.known && s.Eligible(u.fit.Object)
		}
		c.eligible = remember(c.eligible, s.ConstraintsKey, e)
	}
	if ok && f.nodesVersion == c.nodesVersion && c.catchUp(f, s, e.eligible) {
		return f.tally.Result
	}
	f = &cachedFit{version: c.version, nodesVersion: c.nodesVersion, tally: nodefit.NewTally(s, c.fitNodes, e.eligible)}
	c.fits = remember(c.fits, s.Key, f)
	return f.tally.Result
}

// catchUp brings a cached estimate up to date from the change log: each
// node whose pods changed since is recounted. False when the log does not
// reach back that far or the tally needs a full count.
func (c *Capacity) catchUp(f *cachedFit, s *nodefit.Shape, eligible []bool) bool {
	// Every version change not logged is a node's, which also changes
	// nodesVersion (checked by the caller): the log's last `behind`
	// entries are exactly the changes missed, oldest first.
	behind := c.version - f.version
	if behind > uint64(len(c.changes)) {
		return false
	}
	n := len(c.changes)
	for k := uint64(0); k < behind; k++ {
		ch := c.changes[(c.head+n-int(behind)+int(k))%n]
		if ch.version <= f.version {
			return false // a change not logged (a node's): count afresh
		}
		if !f.tally.Update(s, c.fitNodes, eligible, ch.node) {
			return false
		}
	}
	f.version = c.version
	return true
}

// logChange records that a node's pods change, bumping the version.
func (c *Capacity) logChange(u *nodeUsage) {
	c.version++
	ch := change{version: c.version, node: u.index}
	if len(c.changes) < changeLog {
		c.changes = append(c.changes, ch)
		c.head = len(c.changes) % changeLog
		return
	}
	c.changes[c.head] = ch
	c.head = (c.head + 1) % changeLog
}

func remember[V any](m map[string]V, key string, v V) map[string]V {
	if m == nil || len(m) >= maxCachedShapes {
		m = map[string]V{}
	}
	m[key] = v
	return m
}

// sameForEstimates reports whether two versions of a node agree on what
// the totals and estimates read: labels, taints, cordon and readiness.
func sameForEstimates(a, b *corev1.Node) bool {
	return a != nil && b != nil && a.Spec.Unschedulable == b.Spec.Unschedulable && maps.Equal(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) && nodefit.Ready(a) == nodefit.Ready(b)
}

// remove forgets a node, keeping order dense.
func (c *Capacity) remove(name string) {
	u := c.nodes[name]
	delete(c.nodes, name)
	last := len(c.order) - 1
	c.order[u.index] = c.order[last]
	c.order[u.index].index = u.index
	c.fitNodes[u.index] = c.fitNodes[last]
	c.order[last], c.fitNodes[last] = nil, nil // no reference left to the node
	c.order, c.fitNodes = c.order[:last], c.fitNodes[:last]
	c.nodesVersion++
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
		u = &nodeUsage{requested: map[corev1.ResourceName]int64{}, index: len(c.order)}
		c.nodes[name] = u
		c.order = append(c.order, u)
		c.fitNodes = append(c.fitNodes, &u.fit)
		c.nodesVersion++
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
	return nodefit.Ready(node)
}

func milli(list corev1.ResourceList) map[corev1.ResourceName]int64 {
	m := make(map[corev1.ResourceName]int64, len(list))
	for name, q := range list {
		m[name] = nodefit.Amount(name, q)
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
		list[name] = nodefit.Quantity(name, v)
	}
	return list
}

// boundWorkload is the workload a pod counts for in Capacity.Bound: its
// workloadOf, or "" for a pod being deleted (its replacement is what a
// reservation waits for).
func boundWorkload(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	return workloadOf(pod)
}

// WorkloadKey names a workload in Capacity.Bound and in the scheduler's
// ledger: API group, kind, namespace and name. A Deployment and a
// StatefulSet (or a Job) of the same name in one namespace are different
// workloads with pods of their own.
func WorkloadKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// workloadOf names the workload a pod belongs to (WorkloadKey): its
// controller, or for a pod of an apps ReplicaSet the Deployment the
// ReplicaSet's name carries (the name less "-" and the pod-template-hash
// label). "" when the pod has no controller.
func workloadOf(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		group := ""
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
			group = gv.Group
		}
		kind, name := ref.Kind, ref.Name
		if h := pod.Labels["pod-template-hash"]; group == "apps" && kind == "ReplicaSet" && h != "" {
			kind, name = "Deployment", strings.TrimSuffix(name, "-"+h)
		}
		return WorkloadKey(group, kind, pod.Namespace, name)
	}
	return ""
}
