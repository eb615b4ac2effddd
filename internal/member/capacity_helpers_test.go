package member

// This file builds the nodes, pods and resource lists of the capacity
// tests and compares their results.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

// rl builds a resource list from name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic("rl needs name, quantity pairs")
	}
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// stdAlloc is a node with 8 cores, 32Gi and 110 pods.
func stdAlloc() corev1.ResourceList { return rl("cpu", "8", "memory", "32Gi", "pods", "110") }

func mkNode(name string, alloc corev1.ResourceList, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: alloc,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			},
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func readyStatus(s corev1.ConditionStatus) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = s
			}
		}
	}
}

func noReadyCondition(n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}
}

func tainted(effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/dedicated", Value: "x", Effect: effect})
	}
}

func mkPod(node string, requests corev1.ResourceList, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// summaryWant is a Summary in strings, compared with Quantity.Cmp.
type summaryWant struct {
	nodes, schedulable int32
	alloc, avail       map[string]string
}

// checkList compares resource lists by quantity value, not by format.
func checkList(t *testing.T, what string, got corev1.ResourceList, want map[string]string) {
	t.Helper()
	var diffs []string
	for name, w := range want {
		q, ok := got[corev1.ResourceName(name)]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing, want %s", name, w))
			continue
		}
		if wq := resource.MustParse(w); q.Cmp(wq) != 0 {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", name, q.String(), w))
		}
	}
	for name, q := range got {
		if _, ok := want[string(name)]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want none", name, q.String()))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Errorf("%s differs:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

func checkSummary(t *testing.T, got Summary, want summaryWant) {
	t.Helper()
	if got.Nodes != want.nodes || got.SchedulableNodes != want.schedulable {
		t.Errorf("Nodes, SchedulableNodes = %d, %d; want %d, %d", got.Nodes, got.SchedulableNodes, want.nodes, want.schedulable)
	}
	checkList(t, "Allocatable", got.Allocatable, want.alloc)
	checkList(t, "Available", got.Available, want.avail)
}
