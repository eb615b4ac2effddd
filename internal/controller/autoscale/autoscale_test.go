package autoscale_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// hpa targets Deployment name with a cpu Utilization target of 50% and a
// short scale-down window.
func hpa(ns, name string, min, max int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(min), MaxReplicas: max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))},
			}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(20))}},
		},
	}
}

// memberReplicas returns each member's copy's spec.replicas.
func memberReplicas(ctx context.Context, ns, name string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, m := range env.Members {
		d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out[m.Name] = *d.Spec.Replicas
	}
	return out, nil
}

// setLoad annotates the pods of app in member with a cpu usage.
func setLoad(t *testing.T, member int, ns, app, cpu string) {
	t.Helper()
	ctx := context.Background()
	cs := env.Members[member].Client
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, localenv.AnnotationUsageCPU, cpu)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFederatedHPA: load on the pods in one member scales the host
// Deployment up (the usage is averaged over both members' pods), the new
// replicas are divided by the policy over both members, and the HPA's
// status shows the federation's average; without the load the Deployment
// scales back down to minReplicas after the stabilization window.
func TestFederatedHPA(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	dep := testenv.MakeDeployment("api", ns).Replicas(2).CPU("100m").Obj()
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "one api replica running in each member", func(ctx context.Context) error {
		for _, m := range env.Members {
			if err := testenv.DeploymentReady(ctx, m.Client, ns, "api"); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
		return nil
	})
	if err := admin.Create(ctx, hpa(ns, "api", 2, 8)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the HPA reads usage from both members", func(ctx context.Context) error {
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, h); err != nil {
			return err
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionTrue && len(h.Status.CurrentMetrics) == 1 {
				return nil
			}
		}
		return fmt.Errorf("status %+v", h.Status)
	})

	// 200m on member-1's pod: (200m + 1m) / 2 pods = 100% of the 100m
	// request, twice the target.
	setLoad(t, 0, ns, "api", "200m")
	testenv.Eventually(t, waitTimeout, "scaled up and divided over both members", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas < 4 {
			return fmt.Errorf("host replicas %d", *d.Spec.Replicas)
		}
		per, err := memberReplicas(ctx, ns, "api")
		if err != nil {
			return err
		}
		if per["member-1"]+per["member-2"] != *d.Spec.Replicas || per["member-1"] < 2 || per["member-2"] < 2 {
			return fmt.Errorf("host %d, members %v: want the new count divided over both", *d.Spec.Replicas, per)
		}
		return nil
	})
	events, err := env.Host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rescaled := false
	for _, e := range events.Items {
		rescaled = rescaled || (e.Reason == "SuccessfulRescale" && strings.Contains(e.Note, "New size"))
	}
	if !rescaled {
		t.Error("no SuccessfulRescale event on the HPA")
	}

	setLoad(t, 0, ns, "api", "1m")
	testenv.Eventually(t, waitTimeout, "back to minReplicas after the window", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("host replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}

// TestHPAOfAnUnfederatedTarget: an HPA whose target no policy divides
// says so and scales nothing.
func TestHPAOfAnUnfederatedTarget(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	if err := admin.Create(ctx, testenv.MakeDeployment("lonely", ns).Replicas(3).CPU("100m").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, hpa(ns, "lonely", 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, hpa(ns, "ghost", 1, 5)); err != nil {
		t.Fatal(err)
	}
	for name, reason := range map[string]string{"lonely": "NotFederated", "ghost": "FailedGetScale"} {
		testenv.Eventually(t, waitTimeout, "HPA "+name+" AbleToScale=False "+reason, func(ctx context.Context) error {
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h); err != nil {
				return err
			}
			for _, c := range h.Status.Conditions {
				if c.Type == autoscalingv2.AbleToScale && c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message != "" {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", h.Status.Conditions)
		})
	}
	d := &appsv1.Deployment{}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lonely"}, d); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("the unfederated target was scaled: %v, %v", d.Spec.Replicas, err)
	}
}

// TestTwoHPAsOnOneTarget: two federated HPAs that scale one Deployment
// both say so (ScalingActive=False, AmbiguousSelector) and neither
// scales it, as Kubernetes does for HPAs that select the same pods; once
// one is deleted the other scales it.
func TestTwoHPAsOnOneTarget(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	if err := admin.Create(ctx, testenv.MakeDeployment("twin", ns).Replicas(2).CPU("100m").Obj()); err != nil {
		t.Fatal(err)
	}
	low, high := hpa(ns, "twin", 1, 2), hpa(ns, "twin", 6, 8)
	low.Name, high.Name = "twin-low", "twin-high"
	for _, h := range []*autoscalingv2.HorizontalPodAutoscaler{low, high} {
		if err := admin.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for name, other := range map[string]string{"twin-low": "twin-high", "twin-high": "twin-low"} {
		testenv.Eventually(t, waitTimeout, "HPA "+name+" ScalingActive=False AmbiguousSelector", func(ctx context.Context) error {
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h); err != nil {
				return err
			}
			for _, c := range h.Status.Conditions {
				if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse && c.Reason == "AmbiguousSelector" && strings.Contains(c.Message, other) {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", h.Status.Conditions)
		})
	}
	d := &appsv1.Deployment{}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "twin"}, d); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("the target was scaled while two HPAs claim it: %v, %v", d.Spec.Replicas, err)
	}

	if err := admin.Delete(ctx, low); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the remaining HPA scales the target to its minReplicas", func(ctx context.Context) error {
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "twin"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 6 {
			return fmt.Errorf("host replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}
