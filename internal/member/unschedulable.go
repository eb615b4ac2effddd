package member

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// pendingFieldSelector keeps only pods that no node holds yet. A pod that
// is bound (or fails before it is) leaves the watch as a deletion, so the
// cache holds the member's unbound pods only.
const pendingFieldSelector = "spec.nodeName=,status.phase=Pending"

// UnschedulablePod is a pod the member's scheduler could not place.
type UnschedulablePod struct {
	// Name is the pod's name.
	Name string
	// Since is when the pod's PodScheduled condition became False.
	Since time.Time
}

// UnschedulableEvent says that the member's scheduler gave up placing a pod
// for now (its PodScheduled condition turned False with reason
// Unschedulable). The cache's first list reports every pod already in that
// state, so a restarted subscriber misses none.
type UnschedulableEvent struct {
	// Cluster is the member's name.
	Cluster string
	// Namespace and Name identify the pod.
	Namespace, Name string
	// Owner and OwnerName are the kind and name of the pod's controller
	// (a ReplicaSet, StatefulSet, ...); empty when it has none.
	Owner     schema.GroupKind
	OwnerName string
	// Labels are the pod's labels.
	Labels map[string]string
}

// UnschedulableHandler receives UnschedulableEvents. It must not block.
type UnschedulableHandler func(UnschedulableEvent)

// pendingPods watches a member's unbound pods, trimmed to what application
// failover needs to tell whether a workload's replicas are unschedulable.
type pendingPods struct {
	informer cache.SharedIndexInformer
	// started is when the cache was made (see StallAfter).
	started time.Time
}

// newPendingPods returns the cache of a member's unbound pods; became is
// called with each pod that turns unschedulable (see becameUnschedulable).
func newPendingPods(client kubernetes.Interface, became func(*pendingPod)) *pendingPods {
	core := client.CoreV1()
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = pendingFieldSelector
			return core.Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = pendingFieldSelector
			return core.Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	_ = inf.SetTransform(trimPendingPod)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p := becameUnschedulable(nil, obj); p != nil {
				became(p)
			}
		},
		UpdateFunc: func(old, obj any) {
			if p := becameUnschedulable(old, obj); p != nil {
				became(p)
			}
		},
	})
	return &pendingPods{informer: inf, started: time.Now()}
}

// becameUnschedulable returns the pod obj when it is unschedulable and old
// (nil for an added pod) was not; otherwise nil.
func becameUnschedulable(old, obj any) *pendingPod {
	p, ok := obj.(*pendingPod)
	if !ok || !p.unschedulable() {
		return nil
	}
	if o, ok := old.(*pendingPod); ok && o.unschedulable() {
		return nil
	}
	return p
}

// run runs the informer until ctx ends.
func (p *pendingPods) run(ctx context.Context) { p.informer.RunWithContext(ctx) }

// unschedulable returns the cached pods in namespace that match selector
// and are unschedulable, and the cache's state.
func (p *pendingPods) unschedulable(namespace string, selector labels.Selector) ([]UnschedulablePod, CacheState) {
	if !p.informer.HasSynced() {
		if time.Since(p.started) > StallAfter {
			return nil, CacheStalled
		}
		return nil, CacheSyncing
	}
	return unschedulableIn(p.informer.GetIndexer(), namespace, selector), CacheSynced
}

// unschedulableIn returns the unschedulable pods in namespace that match
// selector from an indexer of pendingPods with a namespace index.
func unschedulableIn(indexer cache.Indexer, namespace string, selector labels.Selector) []UnschedulablePod {
	// The namespace index always exists, so ByIndex cannot fail.
	objs, _ := indexer.ByIndex(cache.NamespaceIndex, namespace)
	return filterUnschedulable(objs, selector)
}

// UnschedulablePods returns the member's pods in namespace that match
// selector, whose PodScheduled condition is False with reason
// Unschedulable and that are not being deleted, sorted by Since and then
// name. A nil selector matches no pod. Until the session's cache of
// unbound pods has listed the member (it starts once the member is first
// healthy) the state is CacheSyncing, or CacheStalled once it has listed
// for StallAfter (the member forbids or fails the list), and pods is nil
// and means nothing. Pods that turn unschedulable are announced to the
// Pool's SubscribeUnschedulable handlers.
func (s *Session) UnschedulablePods(namespace string, selector labels.Selector) ([]UnschedulablePod, CacheState) {
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	if pending == nil {
		return nil, CacheSyncing
	}
	return pending.unschedulable(namespace, selector)
}

// filterUnschedulable returns the unschedulable pods among the cached
// objects that match selector, sorted by Since and then name.
func filterUnschedulable(objs []any, selector labels.Selector) []UnschedulablePod {
	if selector == nil {
		return nil
	}
	var out []UnschedulablePod
	for _, obj := range objs {
		p, ok := obj.(*pendingPod)
		if !ok || !p.unschedulable() || !selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, UnschedulablePod{Name: p.Name, Since: p.ScheduledSince})
	}
	slices.SortFunc(out, func(a, b UnschedulablePod) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// pendingPod is what the cache of unbound pods keeps of a pod: identity,
// labels, controller, whether it is being deleted and its PodScheduled
// condition. The resource version stays for the informer's bookkeeping.
type pendingPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Owner and OwnerName identify the pod's controller, if any.
	Owner     schema.GroupKind
	OwnerName string
	// Deleting says that the pod has a deletion timestamp.
	Deleting bool
	// ScheduledStatus and ScheduledReason are the PodScheduled condition's
	// status and reason; empty when the pod has no such condition.
	ScheduledStatus corev1.ConditionStatus
	ScheduledReason string
	// ScheduledSince is the condition's last transition time.
	ScheduledSince time.Time
}

// DeepCopyObject implements runtime.Object.
func (p *pendingPod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// unschedulable reports whether the scheduler gave up placing the pod for
// now (PodScheduled False, reason Unschedulable) and the pod is not being
// deleted. Other reasons (SchedulingGated, a scheduler's own) are not
// capacity problems that another member could solve.
func (p *pendingPod) unschedulable() bool {
	return !p.Deleting && p.ScheduledStatus == corev1.ConditionFalse && p.ScheduledReason == corev1.PodReasonUnschedulable
}

// trimPendingPod turns a pod from the watch into a pendingPod. Other
// objects (tombstones) pass unchanged.
func trimPendingPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &pendingPod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, ResourceVersion: pod.ResourceVersion, Labels: pod.Labels},
		Deleting:   pod.DeletionTimestamp != nil,
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		out.Owner, out.OwnerName = schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, ref.Name
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			out.ScheduledStatus, out.ScheduledReason, out.ScheduledSince = c.Status, c.Reason, c.LastTransitionTime.Time
			break
		}
	}
	return out, nil
}
