package member

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// podFieldSelector keeps only pods that count against a node: bound and not
// terminated. A pod that terminates leaves the watch as a deletion.
const podFieldSelector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

// inventory watches a member's nodes and pods, trimmed to the fields that
// capacity needs, and keeps their totals.
type inventory struct {
	nodes, pods cache.SharedIndexInformer
	// nodesReg and podsReg report when the capacity handlers, not only the
	// informers' stores, have seen every initially listed object.
	nodesReg, podsReg cache.ResourceEventHandlerRegistration
	changed           func()

	mu       sync.Mutex
	capacity *Capacity
}

func newInventory(client kubernetes.Interface, changed func()) *inventory {
	inv := &inventory{capacity: NewCapacity(), changed: changed}
	core := client.CoreV1()
	inv.nodes = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return core.Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return core.Nodes().Watch(ctx, o)
		},
	}, &corev1.Node{}, cache.SharedIndexInformerOptions{})
	inv.pods = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = podFieldSelector
			return core.Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = podFieldSelector
			return core.Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, cache.SharedIndexInformerOptions{})
	_ = inv.nodes.SetTransform(trimNode)
	_ = inv.pods.SetTransform(trimPod)
	inv.nodesReg, _ = inv.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { inv.setNode(obj) },
		UpdateFunc: func(_, obj any) { inv.setNode(obj) },
		DeleteFunc: inv.deleteNode,
	})
	inv.podsReg, _ = inv.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { inv.setPod(obj) },
		UpdateFunc: func(_, obj any) { inv.setPod(obj) },
		DeleteFunc: inv.deletePod,
	})
	return inv
}

// run runs the informers until ctx ends. Once the capacity handlers have
// seen every initially listed node and pod it signals a change, so that the
// first summary is reported even when the lists were empty.
func (inv *inventory) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { inv.nodes.RunWithContext(ctx) })
	wg.Go(func() { inv.pods.RunWithContext(ctx) })
	if cache.WaitForCacheSync(ctx.Done(), inv.nodesReg.HasSynced, inv.podsReg.HasSynced) {
		inv.changed()
	}
	wg.Wait()
}

// summary returns the totals once both caches are filled.
func (inv *inventory) summary() (Summary, bool) {
	if !inv.nodesReg.HasSynced() || !inv.podsReg.HasSynced() {
		return Summary{}, false
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.capacity.Summary(), true
}

func (inv *inventory) setNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	inv.mu.Lock()
	inv.capacity.SetNode(node)
	inv.mu.Unlock()
	inv.changed()
}

func (inv *inventory) deleteNode(obj any) {
	key, ok := deletedKey(obj)
	if !ok {
		return
	}
	inv.mu.Lock()
	inv.capacity.DeleteNode(key)
	inv.mu.Unlock()
	inv.changed()
}

func (inv *inventory) setPod(obj any) {
	pod, ok := obj.(*cachedPod)
	if !ok {
		return
	}
	inv.mu.Lock()
	inv.capacity.setUsage(pod.Namespace+"/"+pod.Name, pod.NodeName, pod.Workload, pod.Phase, pod.Requests)
	inv.mu.Unlock()
	inv.changed()
}

func (inv *inventory) deletePod(obj any) {
	key, ok := deletedKey(obj)
	if !ok {
		return
	}
	inv.mu.Lock()
	inv.capacity.DeletePod(key)
	inv.mu.Unlock()
	inv.changed()
}

func deletedKey(obj any) (string, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, true
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	return key, err == nil
}

// PodRequests returns the resources a pod reserves on its node: the larger
// of its containers' and init containers' requests plus overhead, as the
// kube-scheduler counts them.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// cachedPod is what the pod cache keeps of a pod: identity, node, phase,
// workload (see boundWorkload) and the pod's effective requests in
// Capacity's units. A pod of ten kilobytes shrinks to a few hundred bytes.
type cachedPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	NodeName string
	Workload string
	Phase    corev1.PodPhase
	Requests map[corev1.ResourceName]int64
}

// DeepCopyObject implements runtime.Object.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Requests = make(map[corev1.ResourceName]int64, len(p.Requests))
	for k, v := range p.Requests {
		out.Requests[k] = v
	}
	return &out
}

// trimPod turns a pod from the watch into a cachedPod.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &cachedPod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		NodeName:   pod.Spec.NodeName,
		Workload:   boundWorkload(pod),
		Phase:      pod.Status.Phase,
		Requests:   milli(PodRequests(pod)),
	}, nil
}

// trimNode keeps identity, labels, schedulability, allocatable resources
// and the Ready condition.
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion, Labels: node.Labels},
		Spec:       corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints},
		Status:     corev1.NodeStatus{Allocatable: node.Status.Allocatable},
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// Nodes is the node-level view of a member the scheduler estimates with.
// Its methods are only valid inside the function given to
// Session.EstimateNodes.
type Nodes interface {
	// Fit estimates the room for replicas of a shape (Capacity.Fit).
	Fit(s *nodefit.Shape) nodefit.Result
	// Bound counts a workload's bound pods (Capacity.Bound).
	Bound(workload string) int32
	// Version changes whenever a node or pod changes (Capacity.Version).
	Version() uint64
}

// withCapacity runs f on the totals under the lock, once both caches are
// filled; false when they are not yet.
func (inv *inventory) withCapacity(f func(Nodes)) bool {
	if !inv.nodesReg.HasSynced() || !inv.podsReg.HasSynced() {
		return false
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	f(inv.capacity)
	return true
}
