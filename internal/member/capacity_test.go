package member

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSchedulable(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready node", mkNode("n", stdAlloc()), true},
		{"cordoned", mkNode("n", stdAlloc(), cordoned), false},
		{"NotReady", mkNode("n", stdAlloc(), readyStatus(corev1.ConditionFalse)), false},
		{"Ready Unknown", mkNode("n", stdAlloc(), readyStatus(corev1.ConditionUnknown)), false},
		{"no Ready condition", mkNode("n", stdAlloc(), noReadyCondition), false},
		{"NoSchedule taint", mkNode("n", stdAlloc(), tainted(corev1.TaintEffectNoSchedule)), false},
		{"NoExecute taint", mkNode("n", stdAlloc(), tainted(corev1.TaintEffectNoExecute)), false},
		{"PreferNoSchedule taint", mkNode("n", stdAlloc(), tainted(corev1.TaintEffectPreferNoSchedule)), true},
		{"PreferNoSchedule then NoSchedule taint", mkNode("n", stdAlloc(), tainted(corev1.TaintEffectPreferNoSchedule), tainted(corev1.TaintEffectNoSchedule)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Schedulable(tt.node); got != tt.want {
				t.Errorf("Schedulable() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]string
	}{
		{
			name: "sum of containers",
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
				{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m", "nvidia.com/gpu", "1")}},
			}}},
			want: map[string]string{"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
		},
		{
			name: "largest init container wins over a smaller sum, plus overhead",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Name: "i1", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "3", "memory", "1Gi")}},
					{Name: "i2", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}},
				},
				Containers: []corev1.Container{
					{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
					{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
				},
				Overhead: rl("cpu", "250m", "memory", "128Mi"),
			}},
			// cpu max(2, 3) + 250m, memory max(2Gi, 1Gi) + 128Mi.
			want: map[string]string{"cpu": "3250m", "memory": "2176Mi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkList(t, "PodRequests", PodRequests(tt.pod), tt.want)
		})
	}
}

func TestCapacity(t *testing.T) {
	std := func(n int) map[string]string {
		return map[string]string{"cpu": fmt.Sprint(8 * n), "memory": fmt.Sprintf("%dGi", 32*n), "pods": fmt.Sprint(110 * n)}
	}
	initPod := &corev1.Pod{
		Spec: corev1.PodSpec{
			NodeName: "n1",
			InitContainers: []corev1.Container{
				{Name: "i1", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "3", "memory", "1Gi")}},
			},
			Containers: []corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
				{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
			},
			Overhead: rl("cpu", "250m", "memory", "128Mi"),
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}

	tests := []struct {
		name      string
		ops       func(c *Capacity)
		want      summaryWant
		wantNodes int // len(c.nodes)
		wantPods  int // len(c.pods)
	}{
		{
			name: "empty",
			ops:  func(c *Capacity) {},
			want: summaryWant{},
		},
		{
			name: "only schedulable nodes count towards allocatable",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("ready1", stdAlloc()))
				c.SetNode(mkNode("ready2", stdAlloc()))
				c.SetNode(mkNode("prefer", stdAlloc(), tainted(corev1.TaintEffectPreferNoSchedule)))
				c.SetNode(mkNode("cordoned", stdAlloc(), cordoned))
				c.SetNode(mkNode("notready", stdAlloc(), readyStatus(corev1.ConditionFalse)))
				c.SetNode(mkNode("noschedule", stdAlloc(), tainted(corev1.TaintEffectNoSchedule)))
				c.SetNode(mkNode("noexecute", stdAlloc(), tainted(corev1.TaintEffectNoExecute)))
			},
			want:      summaryWant{nodes: 7, schedulable: 3, alloc: std(3), avail: std(3)},
			wantNodes: 7,
		},
		{
			name: "no schedulable node gives empty lists",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("cordoned", stdAlloc(), cordoned))
				c.SetPod("ns/p", mkPod("cordoned", rl("cpu", "1")))
			},
			want:      summaryWant{nodes: 1, schedulable: 0},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "available subtracts bound running pods and counts them",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "1500m", "memory", "4Gi")))
				c.SetPod("ns/b", mkPod("n2", rl("cpu", "500m", "memory", "1Gi")))
				c.SetPod("ns/pending", mkPod("n1", rl("cpu", "1"), phase(corev1.PodPending)))
				c.SetPod("ns/besteffort", mkPod("n2", nil))
			},
			want: summaryWant{nodes: 2, schedulable: 2, alloc: std(2),
				avail: map[string]string{"cpu": "13", "memory": "59Gi", "pods": "216"}},
			wantNodes: 2, wantPods: 4,
		},
		{
			name: "succeeded, failed and unbound pods are ignored",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/done", mkPod("n1", rl("cpu", "1"), phase(corev1.PodSucceeded)))
				c.SetPod("ns/failed", mkPod("n1", rl("cpu", "1"), phase(corev1.PodFailed)))
				c.SetPod("ns/unbound", mkPod("", rl("cpu", "1"), phase(corev1.PodPending)))
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 1,
		},
		{
			name: "pod that terminates stops counting",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/job", mkPod("n1", rl("cpu", "2")))
				c.SetPod("ns/job", mkPod("n1", rl("cpu", "2"), phase(corev1.PodSucceeded)))
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 1,
		},
		{
			name: "pods on unschedulable nodes do not reduce available",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("cordoned", stdAlloc(), cordoned))
				c.SetPod("ns/a", mkPod("cordoned", rl("cpu", "4")))
			},
			want:      summaryWant{nodes: 2, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 2, wantPods: 1,
		},
		{
			name: "pod update moves usage between nodes",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.SetPod("ns/a", mkPod("n2", rl("cpu", "3")))
			},
			want: summaryWant{nodes: 2, schedulable: 2, alloc: std(2),
				avail: map[string]string{"cpu": "13", "memory": "64Gi", "pods": "219"}},
			wantNodes: 2, wantPods: 1,
		},
		{
			name: "pod update with new requests replaces the old ones",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2", "memory", "1Gi")))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "1")))
			},
			want: summaryWant{nodes: 1, schedulable: 1, alloc: std(1),
				avail: map[string]string{"cpu": "7", "memory": "32Gi", "pods": "109"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "pod delete frees its requests; deleting an unknown pod is a no-op",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2", "memory", "8Gi")))
				c.SetPod("ns/b", mkPod("n1", rl("cpu", "1")))
				c.DeletePod("ns/a")
				c.DeletePod("ns/a")
				c.DeletePod("ns/never-seen")
			},
			want: summaryWant{nodes: 1, schedulable: 1, alloc: std(1),
				avail: map[string]string{"cpu": "7", "memory": "32Gi", "pods": "109"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "node delete without pods forgets it",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.DeleteNode("n1")
				c.DeleteNode("never-seen")
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 1,
		},
		{
			name: "node deleted with pods bound leaves the summary at once",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.SetPod("ns/b", mkPod("n1", rl("cpu", "1")))
				c.DeleteNode("n1")
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 2, wantPods: 2, // n1 is kept (unknown) until its pods go
		},
		{
			name: "node deleted with pods bound, then the pods: nothing leaks",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.SetPod("ns/b", mkPod("n1", rl("cpu", "1")))
				c.DeleteNode("n1")
				c.DeletePod("ns/a")
				c.DeletePod("ns/b")
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 1, wantPods: 0,
		},
		{
			name: "node deleted with pods bound, then a pod terminates: nothing leaks",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.DeleteNode("n1")
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2"), phase(corev1.PodFailed)))
			},
			want:      summaryWant{},
			wantNodes: 0, wantPods: 0,
		},
		{
			name: "node deleted and recreated starts without stale requests",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.DeleteNode("n1")
				c.DeletePod("ns/a")
				c.SetNode(mkNode("n1", stdAlloc()))
			},
			want:      summaryWant{nodes: 1, schedulable: 1, alloc: std(1), avail: std(1)},
			wantNodes: 1,
		},
		{
			name: "node deleted and recreated while pods remain keeps their usage",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.DeleteNode("n1")
				c.SetNode(mkNode("n1", stdAlloc()))
			},
			want: summaryWant{nodes: 1, schedulable: 1, alloc: std(1),
				avail: map[string]string{"cpu": "6", "memory": "32Gi", "pods": "109"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "pod seen before its node counts once the node arrives",
			ops: func(c *Capacity) {
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.SetNode(mkNode("n1", stdAlloc()))
			},
			want: summaryWant{nodes: 1, schedulable: 1, alloc: std(1),
				avail: map[string]string{"cpu": "6", "memory": "32Gi", "pods": "109"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "pod on a node never seen is not a node",
			ops: func(c *Capacity) {
				c.SetPod("ns/a", mkPod("ghost", rl("cpu", "2")))
			},
			want:      summaryWant{},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "cordoning a node removes it; uncordoning restores it with its pods",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetNode(mkNode("n2", stdAlloc()))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "2")))
				c.SetNode(mkNode("n1", stdAlloc(), cordoned))
				c.SetNode(mkNode("n1", stdAlloc()))
			},
			want: summaryWant{nodes: 2, schedulable: 2, alloc: std(2),
				avail: map[string]string{"cpu": "14", "memory": "64Gi", "pods": "219"}},
			wantNodes: 2, wantPods: 1,
		},
		{
			name: "extended resources",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("g1", rl("cpu", "8", "nvidia.com/gpu", "4", "hugepages-2Mi", "1Gi")))
				c.SetNode(mkNode("g2", rl("cpu", "8", "nvidia.com/gpu", "4")))
				c.SetPod("ns/train", mkPod("g1", rl("cpu", "1", "nvidia.com/gpu", "3", "hugepages-2Mi", "256Mi")))
			},
			want: summaryWant{nodes: 2, schedulable: 2,
				alloc: map[string]string{"cpu": "16", "nvidia.com/gpu": "8", "hugepages-2Mi": "1Gi"},
				avail: map[string]string{"cpu": "15", "nvidia.com/gpu": "5", "hugepages-2Mi": "768Mi"}},
			wantNodes: 2, wantPods: 1,
		},
		{
			name: "requests of resources no node offers are ignored",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", rl("cpu", "8")))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "1", "nvidia.com/gpu", "1", "example.com/foo", "2")))
			},
			want: summaryWant{nodes: 1, schedulable: 1,
				alloc: map[string]string{"cpu": "8"}, avail: map[string]string{"cpu": "7"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "init containers and overhead count as the scheduler counts them",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", stdAlloc()))
				c.SetPod("ns/init", initPod)
			},
			want: summaryWant{nodes: 1, schedulable: 1, alloc: std(1),
				avail: map[string]string{"cpu": "4750m", "memory": "30592Mi", "pods": "109"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "an overcommitted node is zero, not negative, and does not eat into others",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("small", rl("cpu", "2", "memory", "1Gi", "pods", "1")))
				c.SetNode(mkNode("big", rl("cpu", "4", "memory", "4Gi", "pods", "10")))
				c.SetPod("ns/a", mkPod("small", rl("cpu", "2", "memory", "1Gi")))
				c.SetPod("ns/b", mkPod("small", rl("cpu", "1", "memory", "1Gi")))
			},
			want: summaryWant{nodes: 2, schedulable: 2,
				alloc: map[string]string{"cpu": "6", "memory": "5Gi", "pods": "11"},
				avail: map[string]string{"cpu": "4", "memory": "4Gi", "pods": "10"}},
			wantNodes: 2, wantPods: 2,
		},
		{
			name: "node allocatable shrinking below requests stays at zero",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", rl("cpu", "8")))
				c.SetPod("ns/a", mkPod("n1", rl("cpu", "6")))
				c.SetNode(mkNode("n1", rl("cpu", "4")))
			},
			want: summaryWant{nodes: 1, schedulable: 1,
				alloc: map[string]string{"cpu": "4"}, avail: map[string]string{"cpu": "0"}},
			wantNodes: 1, wantPods: 1,
		},
		{
			name: "totals beyond 8 PiB do not overflow",
			ops: func(c *Capacity) {
				c.SetNode(mkNode("n1", rl("memory", "5Pi", "ephemeral-storage", "5Pi")))
				c.SetNode(mkNode("n2", rl("memory", "5Pi", "ephemeral-storage", "5Pi")))
				c.SetPod("ns/a", mkPod("n1", rl("memory", "1Pi", "ephemeral-storage", "1Ti")))
			},
			want: summaryWant{nodes: 2, schedulable: 2,
				alloc: map[string]string{"memory": "10Pi", "ephemeral-storage": "10Pi"},
				avail: map[string]string{"memory": "9Pi", "ephemeral-storage": "10239Ti"}},
			wantNodes: 2, wantPods: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapacity()
			tt.ops(c)
			checkSummary(t, c.Summary(), tt.want)
			if len(c.nodes) != tt.wantNodes || len(c.pods) != tt.wantPods {
				t.Errorf("internal maps hold %d nodes and %d pods, want %d and %d", len(c.nodes), len(c.pods), tt.wantNodes, tt.wantPods)
			}
			// Requests of a node must only hold resources some pod requests.
			for name, u := range c.nodes {
				for r, v := range u.requested {
					if v == 0 {
						t.Errorf("node %s keeps a zero request for %s", name, r)
					}
				}
				if u.pods < 0 {
					t.Errorf("node %s counts %d pods", name, u.pods)
				}
			}
		})
	}
}

// TestCapacityChurnDoesNotLeak adds and removes many pods on nodes that come
// and go and expects the internal maps to be empty at the end.
