package autoscale_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestMaxLoweredUnderScaleDownProtection: a Deployment above its HPA's
// maxReplicas, in a namespace whose scale-down protection lets at most
// half the replicas go in one change, goes to the maximum at once (as in
// Kubernetes, past the stabilization window) in steps the host's
// admission policy accepts: 8, 4, 2, with no refused rescale on the way.
func TestMaxLoweredUnderScaleDownProtection(t *testing.T) {
	startControlPlane(t)
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"50"}}}`, v1alpha1.AnnotationScaleDownLimit)
	if _, err := env.Host.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	dividePolicy(t, ns)
	if err := admin.Create(ctx, testenv.MakeDeployment("web", ns).Replicas(8).CPU("10m").Obj()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "8 replicas divided over both members", func(ctx context.Context) error {
		per, err := memberReplicas(ctx, ns, "web")
		if err != nil {
			return err
		}
		if per["member-1"]+per["member-2"] != 8 {
			return fmt.Errorf("members %v", per)
		}
		return nil
	})
	h := hpa(ns, "web", 1, 2)
	h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = nil // the default 5 minutes: the bound must not wait for it
	if err := admin.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the host Deployment at maxReplicas", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("host replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	var sizes, refused []string
	testenv.Eventually(t, waitTimeout, "a SuccessfulRescale event for each step", func(ctx context.Context) error {
		events, err := env.Host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		sizes, refused = nil, nil
		for _, e := range events.Items {
			switch e.Reason {
			case "SuccessfulRescale":
				sizes = append(sizes, strings.SplitN(e.Note, ";", 2)[0])
			case "FailedRescale":
				refused = append(refused, e.Note)
			}
		}
		slices.Sort(sizes)
		if !slices.Equal(sizes, []string{"New size: 2", "New size: 4"}) {
			return fmt.Errorf("rescales %q, want to 4, then to 2", sizes)
		}
		return nil
	})
	if len(refused) > 0 {
		t.Errorf("the host refused rescales: %q", refused)
	}
	got := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, got); err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == autoscalingv2.AbleToScale && c.Status != corev1.ConditionTrue {
			t.Errorf("AbleToScale %s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
}
