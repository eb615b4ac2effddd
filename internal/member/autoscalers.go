package member

import (
	"context"
	"errors"
	"fmt"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Workload names a workload whose pods and autoscalers a member is asked
// about.
type Workload struct {
	// GVR is the workload's resource in the member.
	GVR schema.GroupVersionResource
	// Kind is its kind (what an HPA's scaleTargetRef names).
	Kind string
	// Namespace and Name identify it.
	Namespace, Name string
	// Selector selects its pods (nil: it has none).
	Selector labels.Selector
}

// Scales reports whether an HPA's target is the workload.
func (w Workload) Scales(ref autoscalingv2.CrossVersionObjectReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == w.GVR.Group && ref.Kind == w.Kind && ref.Name == w.Name
}

// Autoscalers lists the member's HPAs in the workload's namespace that
// scale it (one list, served from the apiserver's cache).
func (s *Session) Autoscalers(ctx context.Context, w Workload) ([]v1alpha1.MemberAutoscaler, error) {
	list, err := s.client.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list HorizontalPodAutoscalers in %s: %w", w.Namespace, err)
	}
	var out []v1alpha1.MemberAutoscaler
	for i := range list.Items {
		h := &list.Items[i]
		if h.DeletionTimestamp != nil || !w.Scales(h.Spec.ScaleTargetRef) {
			continue
		}
		out = append(out, DescribeAutoscaler(h))
	}
	return out, nil
}

// DescribeAutoscaler is what a take-over records of a member HPA.
func DescribeAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) v1alpha1.MemberAutoscaler {
	minReplicas := int32(1)
	if h.Spec.MinReplicas != nil {
		minReplicas = *h.Spec.MinReplicas
	}
	return v1alpha1.MemberAutoscaler{Name: h.Name, MinReplicas: minReplicas, MaxReplicas: h.Spec.MaxReplicas,
		Managed: h.Labels[v1alpha1.LabelManaged] == "true"}
}

// RemoveAutoscalers deletes the named HPAs of the workload, each only if
// it still scales the workload and Flotilla does not manage it (a
// propagated HPA is removed by propagation); one that is gone already
// is fine.
func (s *Session) RemoveAutoscalers(ctx context.Context, w Workload, names []string) error {
	var errs []error
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		hpas := s.client.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace)
		h, err := hpas.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get HorizontalPodAutoscaler %s/%s: %w", w.Namespace, name, err))
			continue
		}
		if !w.Scales(h.Spec.ScaleTargetRef) || DescribeAutoscaler(h).Managed {
			continue
		}
		uid := h.UID
		err = hpas.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete HorizontalPodAutoscaler %s/%s: %w", w.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}
