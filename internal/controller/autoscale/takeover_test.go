package autoscale_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// watchReplicas records every spec.replicas a member's Deployment shows
// until the test ends.
func watchReplicas(t *testing.T, ns, name string) func() map[string][]int32 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string][]int32{}
	var wg sync.WaitGroup
	for _, m := range env.Members {
		w, err := m.Client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if d, isDep := e.Object.(*appsv1.Deployment); isDep && e.Type != watch.Deleted {
						mu.Lock()
						if s := seen[m.Name]; len(s) == 0 || s[len(s)-1] != *d.Spec.Replicas {
							seen[m.Name] = append(s, *d.Spec.Replicas)
						}
						mu.Unlock()
					}
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() map[string][]int32 {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]int32{}
		for k, v := range seen {
			out[k] = slices.Clone(v)
		}
		return out
	}
}

// ableToScale returns the HPA's AbleToScale condition.
func ableToScale(ctx context.Context, ns, name string) (*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, h); err != nil {
		return nil, nil, err
	}
	for i := range h.Status.Conditions {
		if h.Status.Conditions[i].Type == autoscalingv2.AbleToScale {
			return h, &h.Status.Conditions[i], nil
		}
	}
	return h, nil, nil
}

// TestTakeOverMemberHPAs: a workload that ran in each member with its own
// HPA (3 and 5 replicas) is adopted with flotilla.io/retain-replicas; a
// federated HPA without consent says which member HPAs are in the way and
// scales nothing; with flotilla.io/conflict-resolution: adopt it deletes
// them (recording their bounds), makes the host's replicas 8 and the
// placement 3 + 5, and drops retain-replicas: no member's replicas change
// at any moment.
func TestTakeOverMemberHPAs(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	counts := map[string]int32{"member-1": 3, "member-2": 5}
	for _, m := range env.Members {
		dep := testenv.MakeDeployment("legacy", ns).Replicas(counts[m.Name]).CPU("100m").Obj()
		if _, err := m.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The member's HPA holds the count (no load: it keeps the minimum).
		own := hpa(ns, "legacy", counts[m.Name], 2*counts[m.Name])
		if _, err := m.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, own, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	replicas := watchReplicas(t, ns, "legacy")

	host := testenv.MakeDeployment("legacy", ns).Replicas(2).CPU("100m").Obj()
	host.Annotations = map[string]string{v1alpha1.AnnotationConflictResolution: "adopt", v1alpha1.AnnotationRetainReplicas: "true"}
	if err := admin.Create(ctx, host); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "both members' Deployments adopted", func(ctx context.Context) error {
		for _, m := range env.Members {
			d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Labels[v1alpha1.LabelManaged] != "true" {
				return fmt.Errorf("%s: not managed yet", m.Name)
			}
		}
		return nil
	})

	fed := hpa(ns, "legacy", 8, 16)
	if err := admin.Create(ctx, fed); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "AbleToScale=False MemberAutoscalers naming both member HPAs", func(ctx context.Context) error {
		_, c, err := ableToScale(ctx, ns, "legacy")
		if err != nil {
			return err
		}
		if c == nil || c.Reason != "MemberAutoscalers" || !strings.Contains(c.Message, "member-1") || !strings.Contains(c.Message, "member-2") {
			return fmt.Errorf("AbleToScale %+v", c)
		}
		return nil
	})
	for _, m := range env.Members {
		if _, err := m.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "legacy", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s's HPA is gone without consent: %v", m.Name, err)
		}
	}

	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"adopt"}}}`, v1alpha1.AnnotationConflictResolution)
	if err := admin.Patch(ctx, fed, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "taken over: member HPAs gone, host 8 replicas placed 3+5, retain-replicas dropped, AbleToScale=True", func(ctx context.Context) error {
		for _, m := range env.Members {
			if _, err := m.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "legacy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s's HPA: %v", m.Name, err)
			}
		}
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "legacy"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 8 || d.Annotations[v1alpha1.AnnotationRetainReplicas] != "" {
			return fmt.Errorf("host replicas %d, annotations %v", *d.Spec.Replicas, d.Annotations)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, templates.Key{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "legacy"}.FederatedName(), fo); err != nil {
			return err
		}
		for _, p := range fo.Placement() {
			if ptr.Deref(p.Replicas, -1) != counts[p.Cluster] {
				return fmt.Errorf("placement %s", fo.Status.Placement)
			}
		}
		h, c, err := ableToScale(ctx, ns, "legacy")
		if err != nil {
			return err
		}
		if c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("AbleToScale %+v", c)
		}
		var rec []map[string]any
		if err := json.Unmarshal([]byte(h.Annotations[v1alpha1.AnnotationTakenOver]), &rec); err != nil || len(rec) != 2 {
			return fmt.Errorf("%s: %q (%v)", v1alpha1.AnnotationTakenOver, h.Annotations[v1alpha1.AnnotationTakenOver], err)
		}
		return nil
	})
	for cluster, seen := range replicas() {
		if !slices.Equal(seen, []int32{counts[cluster]}) {
			t.Errorf("%s's replicas went through %v during the take-over, want only %d", cluster, seen, counts[cluster])
		}
	}
	// The federation now writes the placement's counts: the same.
	per, err := memberReplicas(ctx, ns, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if per["member-1"] != 3 || per["member-2"] != 5 {
		t.Errorf("members hold %v after the take-over, want 3 and 5", per)
	}
}
