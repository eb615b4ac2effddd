package member

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

func controlledBy(kind, name, hash string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Namespace = "ns"
		apiVersion := "apps/v1"
		if kind == "CloneSet" {
			apiVersion = "apps.kruise.io/v1alpha1"
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}}
		if hash != "" {
			p.Labels = map[string]string{"pod-template-hash": hash}
		}
	}
}

// webKey is the WorkloadKey of Deployment ns/web, whose pods the tests make.
var webKey = WorkloadKey("apps", "Deployment", "ns", "web")

func TestWorkloadOf(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"deployment pod", mkPod("n", nil, controlledBy("ReplicaSet", "web-5d8f7c", "5d8f7c")), "apps/Deployment/ns/web"},
		{"bare replicaset", mkPod("n", nil, controlledBy("ReplicaSet", "rs", "")), "apps/ReplicaSet/ns/rs"},
		{"statefulset pod", mkPod("n", nil, controlledBy("StatefulSet", "db", "")), "apps/StatefulSet/ns/db"},
		// A Deployment and a StatefulSet of one name count apart.
		{"statefulset named like a deployment", mkPod("n", nil, controlledBy("StatefulSet", "web", "")), "apps/StatefulSet/ns/web"},
		{"custom workload", mkPod("n", nil, controlledBy("CloneSet", "cs", "")), "apps.kruise.io/CloneSet/ns/cs"},
		{"a replicaset of another group is not a deployment's", mkPod("n", nil, func(p *corev1.Pod) {
			p.Namespace = "ns"
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "ReplicaSet", Name: "r-1", Controller: ptr.To(true)}}
			p.Labels = map[string]string{"pod-template-hash": "1"}
		}), "example.com/ReplicaSet/ns/r-1"},
		{"no controller", mkPod("n", nil), ""},
	}
	for _, tt := range tests {
		if got := workloadOf(tt.pod); got != tt.want {
			t.Errorf("%s: workloadOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestCapacityFit follows a member's estimate and bound counts through
// node and pod events, and checks the caches never serve a stale answer.
func TestCapacityFit(t *testing.T) {
	c := NewCapacity()
	shape := nodefit.NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}}}})
	want := func(step string, replicas int64) {
		t.Helper()
		if got := c.Fit(shape).Replicas; got != replicas {
			t.Errorf("%s: Fit = %d, want %d", step, got, replicas)
		}
		// The same answer from scratch: the caches are not stale.
		fresh := nodefit.Estimate(shape, c.nodeList(), nil)
		if fresh.Replicas != replicas {
			t.Errorf("%s: uncached estimate = %d, want %d", step, fresh.Replicas, replicas)
		}
	}
	want("no nodes", 0)
	c.SetNode(mkNode("big", stdAlloc()))
	want("one 8-cpu node", 4)
	c.SetNode(mkNode("small", rl("cpu", "1", "memory", "4Gi", "pods", "110")))
	want("and a 1-cpu node", 4)
	web := controlledBy("ReplicaSet", "web-abc", "abc")
	c.SetPod("ns/web-1", mkPod("big", rl("cpu", "3"), web))
	want("3 cpus used on big", 2)
	if got := c.Bound(webKey); got != 1 {
		t.Errorf("Bound(ns/web) = %d, want 1", got)
	}
	c.SetPod("ns/web-1", mkPod("big", rl("cpu", "3"), web, phase(corev1.PodPending)))
	want("a status change", 2)
	c.SetNode(mkNode("big", stdAlloc(), tainted(corev1.TaintEffectNoSchedule)))
	want("big tainted", 0)
	c.SetNode(mkNode("big", stdAlloc()))
	want("taint removed", 2)
	c.SetPod("ns/web-1", mkPod("big", rl("cpu", "3"), web, phase(corev1.PodSucceeded)))
	want("pod done", 4)
	if got := c.Bound(webKey); got != 0 {
		t.Errorf("Bound(ns/web) after the pod ended = %d, want 0", got)
	}
	c.SetPod("ns/other", mkPod("small", rl("cpu", "1")))
	c.DeleteNode("big")
	want("big deleted", 0)
	if len(c.order) != 1 || c.order[0].index != 0 || c.order[0].fit.Object.Name != "small" {
		t.Errorf("after deleting big the estimate order is %d nodes", len(c.order))
	}
	c.DeletePod("ns/other")
	want("small alone", 0)
	c.DeleteNode("small")
	if len(c.order) != 0 || len(c.nodes) != 0 {
		t.Errorf("every node deleted: %d nodes and %d in the estimate order remain", len(c.nodes), len(c.order))
	}
}

// nodeList is the node table as Estimate takes it.
func (c *Capacity) nodeList() []*nodefit.Node {
	out := make([]*nodefit.Node, len(c.order))
	for i, u := range c.order {
		out[i] = &u.fit
	}
	return out
}

// TestCapacityFitIncremental drives random pod and node changes, past the
// change log's length, and checks the cached estimate against a full count
// after each.
func TestCapacityFitIncremental(t *testing.T) {
	c := NewCapacity()
	shapes := []*nodefit.Shape{
		nodefit.NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "3Gi")}}}}),
		nodefit.NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m")}}}}),
	}
	for i := range 20 {
		c.SetNode(mkNode(fmt.Sprintf("n%d", i), rl("cpu", fmt.Sprint(4+i%3*4), "memory", "32Gi", "pods", "30")))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for step := range 3 * changeLog {
		key := fmt.Sprintf("ns/p%d", rnd.IntN(300))
		switch r := rnd.IntN(100); {
		case r < 55:
			c.SetPod(key, mkPod(fmt.Sprintf("n%d", rnd.IntN(20)), rl("cpu", fmt.Sprintf("%dm", 100+rnd.IntN(2000)), "memory", fmt.Sprintf("%dMi", 100+rnd.IntN(4000)))))
		case r < 98:
			c.DeletePod(key)
		default:
			c.SetNode(mkNode(fmt.Sprintf("n%d", rnd.IntN(20)), rl("cpu", "8", "memory", "32Gi", "pods", "30"), tainted(corev1.TaintEffect([]string{"NoSchedule", "PreferNoSchedule"}[rnd.IntN(2)]))))
		}
		if rnd.IntN(7) != 0 {
			continue // let the estimates fall behind now and then
		}
		for _, s := range shapes {
			got, want := c.Fit(s), nodefit.Estimate(s, c.nodeList(), nil)
			if got.Replicas != want.Replicas || got.Nodes != want.Nodes {
				t.Fatalf("step %d: cached %d on %d nodes, full count %d on %d", step, got.Replicas, got.Nodes, want.Replicas, want.Nodes)
			}
			for j := range want.Largest {
				if got.Largest[j].Amount != max(want.Largest[j].Amount, 0) {
					t.Fatalf("step %d: largest %s %d, full count %d", step, want.Largest[j].Name, got.Largest[j].Amount, want.Largest[j].Amount)
				}
			}
		}
	}
}

// A pod being deleted holds its node's resources until it is gone, but it
// is not one of its workload's replicas any more: a reservation waiting
// for the workload's pods to start does not end on it. A node known only
// from the pods bound to it is not counted as a node.
func TestPodsBeingDeletedAndNodesNotSeen(t *testing.T) {
	c := NewCapacity()
	sts := WorkloadKey("apps", "StatefulSet", "ns", "web")
	shape := nodefit.NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}}}})
	c.SetNode(mkNode("n1", rl("cpu", "8", "pods", "110")))
	c.SetPod("ns/web-a", mkPod("n1", rl("cpu", "2"), controlledBy("StatefulSet", "web", "")))
	c.SetPod("ns/web-b", mkPod("n1", rl("cpu", "2"), controlledBy("StatefulSet", "web", "")))
	if got := c.Bound(sts); got != 2 {
		t.Fatalf("Bound = %d, want 2", got)
	}
	deleting := mkPod("n1", rl("cpu", "2"), controlledBy("StatefulSet", "web", ""))
	deleting.DeletionTimestamp = &metav1.Time{}
	c.SetPod("ns/web-b", deleting)
	if got := c.Bound(sts); got != 1 {
		t.Errorf("with one pod being deleted Bound = %d, want 1", got)
	}
	if got := c.Fit(shape).Replicas; got != 2 {
		t.Errorf("the pod being deleted should still hold its 2 cpus: Fit = %d, want 2", got)
	}
	c.DeletePod("ns/web-b")
	if got, fit := c.Bound(sts), c.Fit(shape).Replicas; got != 1 || fit != 3 {
		t.Errorf("after the deletion Bound = %d, Fit = %d; want 1, 3", got, fit)
	}

	// A pod on a node the cache has not seen (yet, or any more).
	c.SetPod("ns/stray", mkPod("ghost", rl("cpu", "1")))
	if r := c.Fit(shape); r.Total != 1 || r.Nodes != 1 {
		t.Errorf("with a node known only from a pod: Total %d, Nodes %d; want 1, 1", r.Total, r.Nodes)
	}
	c.DeleteNode("n1")
	if r := c.Fit(shape); r.Total != 0 {
		t.Errorf("with only nodes known from pods: Total %d, want 0 (no node-level view)", r.Total)
	}
}
