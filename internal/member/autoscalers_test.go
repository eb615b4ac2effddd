package member

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWorkloadScales(t *testing.T) {
	w := Workload{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespace: "shop", Name: "web"}
	tests := []struct {
		name string
		ref  autoscalingv2.CrossVersionObjectReference
		want bool
	}{
		{"the workload", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, true},
		{"another version of its group", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web"}, true},
		{"another name", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, false},
		{"another kind", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}, false},
		{"another group", autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Deployment", Name: "web"}, false},
		{"a bad apiVersion", autoscalingv2.CrossVersionObjectReference{APIVersion: "a/b/c", Kind: "Deployment", Name: "web"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.Scales(tt.ref); got != tt.want {
				t.Errorf("Scales(%+v) = %v, want %v", tt.ref, got, tt.want)
			}
		})
	}
}
