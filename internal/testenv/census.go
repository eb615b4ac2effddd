package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Census watches one workload's pods and ReplicaSets in several clusters
// and records the worst moments of a rollout: the most pods at once, the
// most pods the ReplicaSets asked for at once (what maxSurge bounds: a
// pod its ReplicaSet has just scaled away lives on until the ReplicaSet
// controller deletes it, on one cluster as on many) and the fewest ready
// pods, over every state the watches reported. Each cluster's watch shows
// states that cluster passed through, so a sum of them never reports a
// moment worse than one that happened.
type Census struct {
	mu       sync.Mutex
	pods     map[string]map[string]bool  // cluster → pod name → ready (pods not being deleted)
	sets     map[string]map[string]int32 // cluster → ReplicaSet name → spec.replicas
	counting bool
	maxPods  int
	maxAsked int
	minReady int
}

// WatchPods starts a Census of the pods matching selector in namespace of
// every cluster, until the test ends. It returns once every watch has
// listed; the worst moments count from then.
func WatchPods(t testing.TB, clusters map[string]kubernetes.Interface, namespace, selector string) *Census {
	t.Helper()
	c := &Census{pods: map[string]map[string]bool{}, sets: map[string]map[string]int32{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for name := range clusters {
		// Before any watch starts: their handlers read these maps.
		c.pods[name], c.sets[name] = map[string]bool{}, map[string]int32{}
	}
	var synced []cache.InformerSynced
	for name, cs := range clusters {
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
		rsInf := f.Apps().V1().ReplicaSets().Informer()
		asked := func(obj any) {
			if rs, ok := obj.(*appsv1.ReplicaSet); ok {
				c.setAsked(name, rs.Name, ptr.Deref(rs.Spec.Replicas, 1))
			}
		}
		if _, err := rsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    asked,
			UpdateFunc: func(_, o any) { asked(o) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if rs, ok := o.(*appsv1.ReplicaSet); ok {
					c.setAsked(name, rs.Name, 0)
				}
			},
		}); err != nil {
			t.Fatal(err)
		}
		synced = append(synced, rsInf.HasSynced)
		inf := f.Core().V1().Pods().Informer()
		record := func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				c.set(name, p.Name, p.DeletionTimestamp == nil, podReady(p))
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    record,
			UpdateFunc: func(_, o any) { record(o) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if p, ok := o.(*corev1.Pod); ok {
					c.set(name, p.Name, false, false)
				}
			},
		}); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		t.Fatal("pod watches did not list within a minute")
	}
	c.mu.Lock()
	c.counting = true
	c.maxPods, c.minReady = c.totals()
	c.maxAsked = c.asked()
	c.mu.Unlock()
	return c
}

// setAsked records one ReplicaSet's spec.replicas.
func (c *Census) setAsked(cluster, rs string, replicas int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets[cluster][rs] = replicas
	if c.counting {
		c.maxAsked = max(c.maxAsked, c.asked())
	}
}

func (c *Census) asked() int {
	n := 0
	for _, m := range c.sets {
		for _, r := range m {
			n += int(r)
		}
	}
	return n
}

// MostAsked returns the most pods the ReplicaSets asked for at once.
func (c *Census) MostAsked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxAsked
}

// set records one pod's state (live: not being deleted) and updates the
// worst moments.
func (c *Census) set(cluster, pod string, live, ready bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if live {
		c.pods[cluster][pod] = ready
	} else {
		delete(c.pods[cluster], pod)
	}
	if !c.counting {
		return
	}
	pods, readyPods := c.totals()
	c.maxPods = max(c.maxPods, pods)
	c.minReady = min(c.minReady, readyPods)
}

func (c *Census) totals() (pods, ready int) {
	for _, m := range c.pods {
		for _, r := range m {
			pods++
			if r {
				ready++
			}
		}
	}
	return pods, ready
}

// Worst returns the most pods seen at once and the fewest ready ones.
func (c *Census) Worst() (maxPods, minReady int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxPods, c.minReady
}

// Now returns the pods and the ready ones at present.
func (c *Census) Now() (pods, ready int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.totals()
}

// String describes the worst moments.
func (c *Census) String() string {
	p, r := c.Worst()
	return fmt.Sprintf("at most %d pods asked for by the ReplicaSets (%d pods seen, those scaled away included), at least %d ready", c.MostAsked(), p, r)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
