package member

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCapacityChurnDoesNotLeak(t *testing.T) {
	c := NewCapacity()
	for round := range 3 {
		for n := range 5 {
			c.SetNode(mkNode(fmt.Sprintf("n%d", n), stdAlloc()))
		}
		for i := range 50 {
			c.SetPod(fmt.Sprintf("ns/p%d", i), mkPod(fmt.Sprintf("n%d", i%5), rl("cpu", "100m", "memory", "64Mi", "nvidia.com/gpu", "1")))
		}
		// Move some pods, terminate some, delete nodes before their pods.
		for i := range 10 {
			c.SetPod(fmt.Sprintf("ns/p%d", i), mkPod(fmt.Sprintf("n%d", (i+1)%5), rl("cpu", "200m")))
		}
		for i := 10; i < 20; i++ {
			c.SetPod(fmt.Sprintf("ns/p%d", i), mkPod(fmt.Sprintf("n%d", i%5), nil, phase(corev1.PodSucceeded)))
		}
		for n := range 5 {
			c.DeleteNode(fmt.Sprintf("n%d", n))
		}
		if s := c.Summary(); s.Nodes != 0 || s.Allocatable != nil || s.Available != nil {
			t.Fatalf("round %d: Summary after deleting all nodes = %+v, want empty", round, s)
		}
		for i := range 50 {
			c.DeletePod(fmt.Sprintf("ns/p%d", i))
		}
		if len(c.nodes) != 0 || len(c.pods) != 0 {
			t.Fatalf("round %d: internal maps hold %d nodes and %d pods after everything was deleted, want none", round, len(c.nodes), len(c.pods))
		}
	}
}

// TestSummaryFormat checks the strings users see in status and kubectl.
func TestSummaryFormat(t *testing.T) {
	tests := []struct {
		name  string
		nodes []corev1.ResourceList
		pods  []corev1.ResourceList // all on the first node
		alloc map[corev1.ResourceName]string
		avail map[corev1.ResourceName]string
	}{
		{
			name:  "whole cores and binary memory",
			nodes: []corev1.ResourceList{stdAlloc(), stdAlloc(), stdAlloc()},
			alloc: map[corev1.ResourceName]string{"cpu": "24", "memory": "96Gi", "pods": "330"},
			avail: map[corev1.ResourceName]string{"cpu": "24", "memory": "96Gi", "pods": "330"},
		},
		{
			name:  "millicores after requests",
			nodes: []corev1.ResourceList{rl("cpu", "2", "memory", "4Gi")},
			pods:  []corev1.ResourceList{rl("cpu", "500m", "memory", "512Mi")},
			alloc: map[corev1.ResourceName]string{"cpu": "2", "memory": "4Gi"},
			avail: map[corev1.ResourceName]string{"cpu": "1500m", "memory": "3584Mi"},
		},
		{
			name:  "memory given in decimal units is shown in binary units",
			nodes: []corev1.ResourceList{rl("memory", "1Gi", "ephemeral-storage", "100Gi"), rl("memory", "1073741824", "ephemeral-storage", "100Gi")},
			alloc: map[corev1.ResourceName]string{"memory": "2Gi", "ephemeral-storage": "200Gi"},
			avail: map[corev1.ResourceName]string{"memory": "2Gi", "ephemeral-storage": "200Gi"},
		},
		{
			name:  "kubelet style Ki memory",
			nodes: []corev1.ResourceList{rl("memory", "7901168Ki"), rl("memory", "7901168Ki")},
			alloc: map[corev1.ResourceName]string{"memory": "15802336Ki"},
			avail: map[corev1.ResourceName]string{"memory": "15802336Ki"},
		},
		{
			name:  "extended resources and hugepages",
			nodes: []corev1.ResourceList{rl("nvidia.com/gpu", "4", "hugepages-1Gi", "4Gi"), rl("nvidia.com/gpu", "4")},
			pods:  []corev1.ResourceList{rl("nvidia.com/gpu", "1", "hugepages-1Gi", "1Gi")},
			alloc: map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "hugepages-1Gi": "4Gi"},
			avail: map[corev1.ResourceName]string{"nvidia.com/gpu": "7", "hugepages-1Gi": "3Gi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapacity()
			for i, alloc := range tt.nodes {
				c.SetNode(mkNode(fmt.Sprintf("n%d", i), alloc))
			}
			for i, req := range tt.pods {
				c.SetPod(fmt.Sprintf("ns/p%d", i), mkPod("n0", req))
			}
			s := c.Summary()
			for _, f := range []struct {
				what string
				got  corev1.ResourceList
				want map[corev1.ResourceName]string
			}{{"Allocatable", s.Allocatable, tt.alloc}, {"Available", s.Available, tt.avail}} {
				if len(f.got) != len(f.want) {
					t.Errorf("%s has %d resources, want %d: %v", f.what, len(f.got), len(f.want), f.got)
				}
				for name, want := range f.want {
					q, ok := f.got[name]
					if got := q.String(); !ok || got != want {
						t.Errorf("%s[%s] = %q, want %q", f.what, name, got, want)
					}
				}
			}
		})
	}
}

func TestQuantitiesEmpty(t *testing.T) {
	if got := quantities(map[corev1.ResourceName]int64{}); got != nil {
		t.Errorf("quantities(empty) = %v, want nil", got)
	}
}
