package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Census watches one workload's pods in several clusters and records the
// worst moments of a rollout: the most pods at once and the fewest ready
// ones, over every state the watches reported. Each cluster's watch shows
// states that cluster passed through, so a sum of them never reports a
// moment worse than one that happened.
type Census struct {
	mu       sync.Mutex
	pods     map[string]map[string]bool // cluster → pod name → ready (pods not being deleted)
	counting bool
	maxPods  int
	minReady int
}

// WatchPods starts a Census of the pods matching selector in namespace of
// every cluster, until the test ends. It returns once every watch has
// listed; the worst moments count from then.
func WatchPods(t testing.TB, clusters map[string]kubernetes.Interface, namespace, selector string) *Census {
	t.Helper()
	c := &Census{pods: map[string]map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var synced []cache.InformerSynced
	for name, cs := range clusters {
		c.pods[name] = map[string]bool{}
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
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
	c.mu.Unlock()
	return c
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
	return fmt.Sprintf("at most %d pods, at least %d ready", p, r)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
