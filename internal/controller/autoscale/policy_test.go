package autoscale

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

func TestPolicyOf(t *testing.T) {
	tests := []struct {
		name     string
		min      *int32
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		wantMin  int32
		wantDown time.Duration
		legacy   bool
	}{
		{name: "defaults", wantMin: 1, wantDown: defaultDownWindow, legacy: true},
		{name: "minReplicas", min: ptr.To[int32](3), wantMin: 3, wantDown: defaultDownWindow, legacy: true},
		// Scaling up from zero needs a metric a federated HPA does not
		// read: a workload at zero would stay there.
		{name: "minReplicas 0 counts as 1", min: ptr.To[int32](0), wantMin: 1, wantDown: defaultDownWindow, legacy: true},
		{name: "scale-down window", behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}, wantMin: 1, wantDown: time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				MinReplicas: tc.min, MaxReplicas: 10, Behavior: tc.behavior}}
			p := policyOf(hpa)
			if p.Min != tc.wantMin || p.Max != 10 || p.DownWindow != tc.wantDown || p.Legacy != tc.legacy {
				t.Errorf("policyOf = min %d max %d down %s legacy %v; want min %d max 10 down %s legacy %v",
					p.Min, p.Max, p.DownWindow, p.Legacy, tc.wantMin, tc.wantDown, tc.legacy)
			}
		})
	}
}
