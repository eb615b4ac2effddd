package agent_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// cpuHPA targets Deployment target with a cpu Utilization target of 50%.
func cpuHPA(ns, name, target string, min, max int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			MinReplicas:    ptr.To(min), MaxReplicas: max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))},
			}}},
		},
	}
}

// TestPullFederatedHPA: a federated HPA of a workload on a pull member
// gets the usage from the member's agent (the hub never reads the
// member's metrics API), takes over the member's own HPA of it through
// the agent, and scales the workload up when its pods are loaded.
func TestPullFederatedHPA(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	member := env.Cluster("member-1").Client
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors:  deploymentsIn(ns),
		ConflictResolution: v1alpha1.ConflictAdopt,
		Placement:          v1alpha1.Placement{ClusterNames: []string{pullName}, ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
	})
	if err := admin.Create(ctx, testenv.MakeDeployment("api", ns).Replicas(2).CPU("100m").Obj()); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "api", v1alpha1.PropagationOK)
	if _, err := member.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, cpuHPA(ns, "api-own", "api", 2, 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, cpuHPA(ns, "api", "api", 2, 6)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the member's own HPA taken over and usage reported by the agent", func(ctx context.Context) error {
		if _, err := member.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "api-own", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("member HPA api-own: %v", err)
		}
		ci, err := intentOf(ctx, ns, "api")
		if err != nil {
			return err
		}
		if ci.Status.Autoscale == nil || len(ci.Status.Autoscale.Usage) == 0 {
			return fmt.Errorf("intent status.autoscale %+v", ci.Status.Autoscale)
		}
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, h); err != nil {
			return err
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionTrue && len(h.Status.CurrentMetrics) == 1 {
				return nil
			}
		}
		return fmt.Errorf("HPA status %+v", h.Status)
	})

	pods, err := member.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"200m"}}}`, localenv.AnnotationUsageCPU)
		if _, err := member.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, waitTimeout, "scaled up from the agent's report", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas < 4 {
			return fmt.Errorf("host replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}
