package nodefit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzEstimate checks the estimate's invariants on arbitrary nodes: never
// negative, never more than the eligible nodes' free pod slots, and no
// node holds more than its free resources over a replica's request.
func FuzzEstimate(f *testing.F) {
	f.Add(int64(1000), int64(1<<30), int64(4000), int64(8<<30), int64(110), int64(500), int64(0), "zone", "a", true)
	f.Add(int64(0), int64(0), int64(-5), int64(1), int64(0), int64(3), int64(9), "", "", false)
	f.Fuzz(func(t *testing.T, cpu, mem, allocCPU, allocMem, pods, usedCPU, usedPods int64, key, value string, taint bool) {
		req := corev1.ResourceList{}
		spec := podSpec("", "")
		if cpu > 0 && cpu < 1<<40 {
			req[corev1.ResourceCPU] = Quantity(corev1.ResourceCPU, cpu)
		}
		if mem > 0 && mem < 1<<50 {
			req[corev1.ResourceMemory] = Quantity(corev1.ResourceMemory, mem)
		}
		spec.Containers[0].Resources.Requests = req
		if key != "" {
			spec.NodeSelector = map[string]string{key: value}
		}
		s := NewShape(spec)
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{key: value}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		if taint {
			obj.Spec.Taints = []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoExecute}}
		}
		n := &Node{Object: obj, Alloc: Vector{CPU: allocCPU, Memory: allocMem, Pods: pods * PodAmount}, Used: Vector{CPU: usedCPU, Pods: usedPods * PodAmount}}
		res := Estimate(s, []*Node{n, n}, nil)
		if res.Replicas < 0 {
			t.Fatalf("negative estimate %d", res.Replicas)
		}
		if slots := max(pods-usedPods, 0) * int64(res.Nodes); res.Replicas > slots {
			t.Fatalf("%d replicas in %d free pod slots", res.Replicas, slots)
		}
		for _, r := range s.Requests {
			if per := s.Count(n); per > 0 && per*r.Amount > n.Alloc.Get(r.Name)-n.Used.Get(r.Name) {
				t.Fatalf("%d replicas of %d %s on a node with %d free", per, r.Amount, r.Name, n.Alloc.Get(r.Name)-n.Used.Get(r.Name))
			}
		}
		_ = res.Explain()
	})
}
