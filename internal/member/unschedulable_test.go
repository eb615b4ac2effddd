package member

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

var (
	since1 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	since2 = time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
)

// pendingOf is an unbound pod whose PodScheduled condition has status and
// reason since the given time; an empty status gives no condition.
func pendingOf(namespace, name string, lbls map[string]string, status corev1.ConditionStatus, reason string, since time.Time, mods ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: "42", Labels: lbls,
			Annotations: map[string]string{"note": "dropped"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if status != "" {
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse},
			{Type: corev1.PodScheduled, Status: status, Reason: reason, Message: "0/3 nodes are available", LastTransitionTime: metav1.NewTime(since)},
		}
	}
	for _, m := range mods {
		m(pod)
	}
	return pod
}

func deleting(pod *corev1.Pod) {
	now := metav1.NewTime(since2)
	pod.DeletionTimestamp = &now
}

var web = map[string]string{"app": "web"}

// ownedBy adds a controller owner reference, plus an owner that is not
// the controller (which trimPendingPod ignores).
func ownedBy(apiVersion, kind, name string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller"},
			{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes},
		}
	}
}

func TestBecameUnschedulable(t *testing.T) {
	trim := func(pod *corev1.Pod) any {
		obj, _ := trimPendingPod(pod)
		return obj
	}
	unschedulable := trim(pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1))
	later := trim(pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since2))
	fresh := trim(pendingOf("shop", "web-1", web, "", "", time.Time{}))
	gated := trim(pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonSchedulingGated, since1))
	gone := trim(pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1, deleting))
	tests := []struct {
		name     string
		old, obj any
		want     bool
	}{
		{name: "added unschedulable (also the first list after a restart)", obj: unschedulable, want: true},
		{name: "added without a decision", obj: fresh},
		{name: "added, gated", obj: gated},
		{name: "turned unschedulable", old: fresh, obj: unschedulable, want: true},
		{name: "gate lifted, then unschedulable", old: gated, obj: unschedulable, want: true},
		{name: "still unschedulable", old: unschedulable, obj: later},
		{name: "unschedulable and now deleted", old: unschedulable, obj: gone},
		{name: "tombstone", obj: cache.DeletedFinalStateUnknown{Key: "shop/web-1", Obj: unschedulable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := becameUnschedulable(tt.old, tt.obj) != nil; got != tt.want {
				t.Errorf("becameUnschedulable() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTrimPendingPod(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{
			name: "unschedulable",
			in:   pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1),
			want: &pendingPod{
				ObjectMeta:      metav1.ObjectMeta{Name: "web-1", Namespace: "shop", ResourceVersion: "42", Labels: web},
				ScheduledStatus: corev1.ConditionFalse, ScheduledReason: corev1.PodReasonUnschedulable, ScheduledSince: since1,
			},
		},
		{
			name: "being deleted",
			in:   pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1, deleting),
			want: &pendingPod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", ResourceVersion: "42", Labels: web},
				Deleting:   true, ScheduledStatus: corev1.ConditionFalse, ScheduledReason: corev1.PodReasonUnschedulable, ScheduledSince: since1,
			},
		},
		{
			name: "controller kept",
			in:   pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1, ownedBy("apps/v1", "ReplicaSet", "web-5d8f")),
			want: &pendingPod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", ResourceVersion: "42", Labels: web},
				Owner:      schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, OwnerName: "web-5d8f",
				ScheduledStatus: corev1.ConditionFalse, ScheduledReason: corev1.PodReasonUnschedulable, ScheduledSince: since1,
			},
		},
		{
			name: "no PodScheduled condition yet",
			in:   pendingOf("shop", "web-1", nil, "", "", time.Time{}),
			want: &pendingPod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", ResourceVersion: "42"}},
		},
		{
			name: "tombstone passes unchanged",
			in:   cache.DeletedFinalStateUnknown{Key: "shop/web-1"},
			want: cache.DeletedFinalStateUnknown{Key: "shop/web-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trimPendingPod(tt.in)
			if err != nil {
				t.Fatalf("trimPendingPod: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("trimPendingPod mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPendingPodDeepCopy(t *testing.T) {
	obj, _ := trimPendingPod(pendingOf("shop", "web-1", map[string]string{"app": "web"}, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1))
	p := obj.(*pendingPod)
	c := p.DeepCopyObject().(*pendingPod)
	if diff := cmp.Diff(p, c); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	c.Labels["app"] = "changed"
	if p.Labels["app"] != "web" {
		t.Errorf("changing the copy's labels changed the original's")
	}
}

// trimmed returns the cached form of pods.
func trimmed(t *testing.T, pods ...*corev1.Pod) []any {
	t.Helper()
	out := make([]any, 0, len(pods))
	for _, pod := range pods {
		obj, err := trimPendingPod(pod)
		if err != nil {
			t.Fatalf("trimPendingPod: %v", err)
		}
		out = append(out, obj)
	}
	return out
}

func TestFilterUnschedulable(t *testing.T) {
	unschedulable := func(name string, lbls map[string]string, since time.Time, mods ...func(*corev1.Pod)) *corev1.Pod {
		return pendingOf("shop", name, lbls, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since, mods...)
	}
	webSelector := labels.SelectorFromSet(web)
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		selector labels.Selector
		want     []UnschedulablePod
	}{
		{
			name:     "sorted by since, then name",
			pods:     []*corev1.Pod{unschedulable("web-c", web, since2), unschedulable("web-b", web, since1), unschedulable("web-a", web, since2)},
			selector: webSelector,
			want:     []UnschedulablePod{{Name: "web-b", Since: since1}, {Name: "web-a", Since: since2}, {Name: "web-c", Since: since2}},
		},
		{
			name: "only pods that match the selector",
			pods: []*corev1.Pod{
				unschedulable("web-1", map[string]string{"app": "web", "pod-template-hash": "abc"}, since1),
				unschedulable("api-1", map[string]string{"app": "api"}, since1),
				unschedulable("bare", nil, since1),
			},
			selector: webSelector,
			want:     []UnschedulablePod{{Name: "web-1", Since: since1}},
		},
		{
			name: "other scheduling states are left out",
			pods: []*corev1.Pod{
				pendingOf("shop", "gated", web, corev1.ConditionFalse, corev1.PodReasonSchedulingGated, since1),
				pendingOf("shop", "scheduled", web, corev1.ConditionTrue, "", since1),
				pendingOf("shop", "unknown", web, corev1.ConditionUnknown, corev1.PodReasonUnschedulable, since1),
				pendingOf("shop", "fresh", web, "", "", time.Time{}),
				pendingOf("shop", "other-reason", web, corev1.ConditionFalse, "SchedulerError", since1),
				unschedulable("web-1", web, since1),
			},
			selector: webSelector,
			want:     []UnschedulablePod{{Name: "web-1", Since: since1}},
		},
		{
			name:     "pods being deleted are left out",
			pods:     []*corev1.Pod{unschedulable("web-1", web, since1, deleting), unschedulable("web-2", web, since2)},
			selector: webSelector,
			want:     []UnschedulablePod{{Name: "web-2", Since: since2}},
		},
		{
			name:     "a nil selector matches nothing",
			pods:     []*corev1.Pod{unschedulable("web-1", web, since1)},
			selector: nil,
			want:     nil,
		},
		{
			name:     "set-based selector",
			pods:     []*corev1.Pod{unschedulable("web-1", web, since1), unschedulable("api-1", map[string]string{"app": "api"}, since1)},
			selector: mustSelector(t, "app in (web,api)"),
			want:     []UnschedulablePod{{Name: "api-1", Since: since1}, {Name: "web-1", Since: since1}},
		},
		{
			name:     "none",
			selector: webSelector,
			want:     nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := filterUnschedulable(trimmed(t, tt.pods...), tt.selector)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("filterUnschedulable mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("parsing selector %q: %v", s, err)
	}
	return sel
}

func TestUnschedulablePodsBeforeStart(t *testing.T) {
	s := &Session{}
	if pods, state := s.UnschedulablePods("shop", labels.Everything()); state != CacheSyncing || pods != nil {
		t.Errorf("UnschedulablePods before the caches started = %v, %v; want nil, CacheSyncing", pods, state)
	}
	p := newPendingPods(fake.NewClientset(), func(*pendingPod) {})
	if pods, state := p.unschedulable("shop", labels.Everything()); state != CacheSyncing || pods != nil {
		t.Errorf("unschedulable before the informer ran = %v, %v; want nil, CacheSyncing", pods, state)
	}
	// A cache that has not listed for StallAfter (the member forbids the
	// list) is stalled: callers stop waiting for it.
	p.started = time.Now().Add(-2 * StallAfter)
	if pods, state := p.unschedulable("shop", labels.Everything()); state != CacheStalled || pods != nil {
		t.Errorf("unschedulable of a stalled cache = %v, %v; want nil, CacheStalled", pods, state)
	}
}

// TestPendingPodsNamespaces checks the namespace index of the cache,
// filled directly: an informer on a fake clientset would not sync, as the
// fake does not end the initial events of a watch list.
func TestPendingPodsNamespaces(t *testing.T) {
	p := newPendingPods(fake.NewClientset(), func(*pendingPod) {})
	indexer := p.informer.GetIndexer()
	for _, obj := range trimmed(t,
		pendingOf("shop", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since2),
		pendingOf("blog", "web-1", web, corev1.ConditionFalse, corev1.PodReasonUnschedulable, since1),
		pendingOf("shop", "web-2", web, corev1.ConditionTrue, "", since1),
	) {
		if err := indexer.Add(obj); err != nil {
			t.Fatalf("adding %v: %v", obj, err)
		}
	}
	tests := []struct {
		namespace string
		want      []UnschedulablePod
	}{
		{namespace: "shop", want: []UnschedulablePod{{Name: "web-1", Since: since2}}},
		{namespace: "blog", want: []UnschedulablePod{{Name: "web-1", Since: since1}}},
		{namespace: "empty", want: nil},
	}
	for _, tt := range tests {
		got := unschedulableIn(indexer, tt.namespace, labels.SelectorFromSet(web))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("namespace %q: mismatch (-want +got):\n%s", tt.namespace, diff)
		}
	}
}
