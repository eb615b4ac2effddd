package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// censusInterval is how often a Census takes its snapshot.
const censusInterval = 40 * time.Millisecond

// Census follows one workload's pods and ReplicaSets in several clusters
// and records the worst moments of a rollout: the most pods at once, the
// most pods the ReplicaSets asked for at once (what maxSurge bounds: a
// pod its ReplicaSet has just scaled away lives on until the ReplicaSet
// controller deletes it, on one cluster as on many) and the fewest ready
// pods. It takes snapshots: every clusters' pods and ReplicaSets listed
// at the same moment (consistent reads, all clusters at once, every
// 40 ms). Summing separate watches instead would add up states of
// different moments when one cluster's events arrive late, and report
// moments that never happened.
type Census struct {
	clusters            map[string]kubernetes.Interface
	namespace, selector string

	mu       sync.Mutex
	last     snapshot
	maxPods  int
	maxAsked int
	minReady int
	err      error
}

// snapshot is one moment over every cluster.
type snapshot struct{ pods, ready, asked int }

// WatchPods starts a Census of the pods (and ReplicaSets) matching
// selector in namespace of every cluster, until the test ends. It returns
// once the first snapshot is taken; the worst moments count from then.
func WatchPods(t testing.TB, clusters map[string]kubernetes.Interface, namespace, selector string) *Census {
	t.Helper()
	c := &Census{clusters: clusters, namespace: namespace, selector: selector}
	ctx, cancel := context.WithCancel(context.Background())
	first, err := take(ctx, clusters, namespace, selector)
	if err != nil {
		cancel()
		t.Fatalf("census: %v", err)
	}
	c.last, c.maxPods, c.maxAsked, c.minReady = first, first.pods, first.asked, first.ready
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(censusInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s, err := take(ctx, clusters, namespace, selector)
			if ctx.Err() != nil {
				return // the test is over: its cancelled lists are no error
			}
			c.record(s, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// take lists every cluster's pods and ReplicaSets at once.
func take(ctx context.Context, clusters map[string]kubernetes.Interface, namespace, selector string) (snapshot, error) {
	var mu sync.Mutex
	var s snapshot
	var firstErr error
	var wg sync.WaitGroup
	for name, cs := range clusters {
		wg.Go(func() {
			opts := metav1.ListOptions{LabelSelector: selector}
			pods, err := cs.CoreV1().Pods(namespace).List(ctx, opts)
			var sets int
			if err == nil {
				list, rerr := cs.AppsV1().ReplicaSets(namespace).List(ctx, opts)
				err = rerr
				if rerr == nil {
					for _, r := range list.Items {
						sets += int(ptr.Deref(r.Spec.Replicas, 1))
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", name, err)
				}
				return
			}
			s.asked += sets
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil {
					continue
				}
				s.pods++
				if podReady(p) {
					s.ready++
				}
			}
		})
	}
	wg.Wait()
	return s, firstErr
}

// Worst returns the most pods seen at once and the fewest ready ones.
func (c *Census) Worst() (maxPods, minReady int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxPods, c.minReady
}

// MostAsked returns the most pods the ReplicaSets asked for at once.
func (c *Census) MostAsked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxAsked
}

// record keeps a snapshot (or its error) and the worst moments.
func (c *Census) record(s snapshot, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.err = err
		return
	}
	c.last = s
	c.maxPods, c.maxAsked, c.minReady = max(c.maxPods, s.pods), max(c.maxAsked, s.asked), min(c.minReady, s.ready)
}

// nowTimeout bounds the snapshot Now takes.
const nowTimeout = 30 * time.Second

// Now takes a snapshot at once (lists begun after the call, so that it
// shows whatever happened before it) and returns its pods and ready ones;
// on an error, the latest snapshot's, the error kept for Err.
func (c *Census) Now() (pods, ready int) {
	ctx, cancel := context.WithTimeout(context.Background(), nowTimeout)
	defer cancel()
	s, err := take(ctx, c.clusters, c.namespace, c.selector)
	c.record(s, err)
	if err == nil {
		return s.pods, s.ready
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.pods, c.last.ready
}

// Err returns the last failed snapshot's error, if any.
func (c *Census) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
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
