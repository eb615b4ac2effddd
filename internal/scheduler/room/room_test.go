package room

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func member(labels map[string]string, nodes int32, available corev1.ResourceList) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{}
	c.Name, c.Labels, c.Status.NodeCount, c.Status.Resources.Available = "m", labels, nodes, available
	return c
}

func TestReplicas(t *testing.T) {
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	tests := []struct {
		name string
		u    *framework.Unit
		c    *v1alpha1.MemberCluster
		want int64
	}{
		{"simulated", &framework.Unit{Fits: map[string]framework.Fit{"m": {Replicas: 3}}}, member(nil, 0, nil), 3},
		{"cpu sums", &framework.Unit{Requests: cpu}, member(nil, 0, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("9")}), 4},
		{"own replicas count as room", &framework.Unit{Requests: cpu, Current: []v1alpha1.ClusterPlacement{{Cluster: "m", Replicas: ptr.To[int32](2)}}},
			member(nil, 0, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}), 2},
		{"pods when nothing is requested", &framework.Unit{}, member(nil, 0, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("7")}), 7},
		{"nothing known", &framework.Unit{}, member(nil, 0, nil), Unlimited},
	}
	for _, tt := range tests {
		if got := Replicas(tt.u, tt.c); got != tt.want {
			t.Errorf("%s: Replicas = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestElasticAndCost(t *testing.T) {
	tests := []struct {
		name     string
		labels   map[string]string
		nodes    int32
		elastic  bool
		headroom int64
		cost     int64
	}{
		{"plain", nil, 3, false, Unlimited, 0},
		{"elastic", map[string]string{v1alpha1.LabelElastic: "true", v1alpha1.LabelCost: "7"}, 3, true, Unlimited, 7},
		{"budget left", map[string]string{v1alpha1.LabelNodeBudget: "10"}, 3, true, 7, 0},
		{"budget reached", map[string]string{v1alpha1.LabelElastic: "true", v1alpha1.LabelNodeBudget: "3"}, 3, false, 0, 0},
		{"unreadable budget and cost", map[string]string{v1alpha1.LabelNodeBudget: "many", v1alpha1.LabelCost: "-1"}, 3, false, 0, 0},
	}
	for _, tt := range tests {
		c := member(tt.labels, tt.nodes, nil)
		e, h := Elastic(c)
		if e != tt.elastic || h != tt.headroom || Cost(c) != tt.cost {
			t.Errorf("%s: Elastic = %t, %d; Cost = %d; want %t, %d; %d", tt.name, e, h, Cost(c), tt.elastic, tt.headroom, tt.cost)
		}
	}
}
