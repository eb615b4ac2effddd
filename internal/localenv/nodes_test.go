package localenv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFakeNodes(t *testing.T) {
	nodes := fakeNodes(nodeSpec{
		member: "member-3", count: 2, cpu: "4", memory: "16Gi", pods: "50",
		region: "eu-west", zone: "eu-west-a", extraLabels: map[string]string{"tier": "gold"},
	})
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(nodes))
	}
	for i, n := range nodes {
		wantName := []string{"member-3-node-1", "member-3-node-2"}[i]
		if n.Name != wantName {
			t.Errorf("node %d named %s, want %s", i, n.Name, wantName)
		}
		for k, v := range map[string]string{LabelRegion: "eu-west", LabelZone: "eu-west-a", "tier": "gold", "kubernetes.io/hostname": wantName} {
			if n.Labels[k] != v {
				t.Errorf("%s label %s=%q, want %q", n.Name, k, n.Labels[k], v)
			}
		}
		if n.Annotations[kwokNodeAnnotation] != "fake" {
			t.Errorf("%s lacks the kwok annotation", n.Name)
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("%s has taints %v; fake nodes must accept every pod", n.Name, n.Spec.Taints)
		}
		for r, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi", corev1.ResourcePods: "50"} {
			if q := n.Status.Allocatable[r]; q.String() != want {
				t.Errorf("%s allocatable %s = %s, want %s", n.Name, r, q.String(), want)
			}
		}
	}
	nodes[0].Status.Capacity[corev1.ResourceCPU] = nodes[0].Status.Allocatable[corev1.ResourcePods]
	if q := nodes[1].Status.Capacity[corev1.ResourceCPU]; q.String() != "4" {
		t.Errorf("nodes share their resource lists")
	}
}

func TestNodeReady(t *testing.T) {
	tests := []struct {
		name string
		cond []corev1.NodeCondition
		want bool
	}{
		{"no conditions", nil, false},
		{"ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, true},
		{"not ready", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, false},
		{"other condition only", []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeReady(&corev1.Node{Status: corev1.NodeStatus{Conditions: tt.cond}}); got != tt.want {
				t.Errorf("nodeReady() = %v, want %v", got, tt.want)
			}
		})
	}
}
