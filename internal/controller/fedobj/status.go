package fedobj

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// StatusApply is the part of a FederatedObject's status one controller
// owns; ApplyStatus sends only these fields. A field left out (zero,
// empty) is given up, and removed unless another manager owns it.
type StatusApply struct {
	// Manager is the field manager: one of v1alpha1.FieldManager*.
	Manager string
	// Status holds the manager's fields and nothing else (every status
	// field is omitted from JSON when empty).
	Status v1alpha1.FederatedObjectStatus
	// ResourceVersion, when set, makes the write conditional: it fails
	// with a conflict if fo changed since it was read.
	ResourceVersion string
}

// ApplyStatus writes the fields of fo's status that a controller owns with
// server-side apply on the status subresource, under its field manager,
// taking the fields over from whoever set them last (force). Fields other
// controllers own are not sent, so writes of different controllers never
// conflict, unless StatusApply.ResourceVersion makes a write conditional
// (the scheduler's are: its decisions build on the placement it read).
// fo is updated with what the host
// returned. The object's UID is sent as a precondition: the status of a
// FederatedObject deleted and created again under the same name is not
// written.
// It writes nothing, and returns false, when fo already holds them.
func ApplyStatus(ctx context.Context, c client.Client, fo *v1alpha1.FederatedObject, a StatusApply) (bool, error) {
	if equality.Semantic.DeepEqual(Owned(fo.Status, a.Manager), a.Status) {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "FederatedObject",
		"metadata":   metadata(fo, a.ResourceVersion),
		"status":     a.Status,
	})
	if err != nil {
		return false, fmt.Errorf("encode the status of %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	if err := c.Status().Patch(ctx, fo, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(a.Manager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply the status of %s/%s as %s: %w", fo.Namespace, fo.Name, a.Manager, err)
	}
	return true, nil
}

// Owned returns the fields of st that manager owns (see
// v1alpha1.FederatedObjectStatus), the others left empty.
func Owned(st v1alpha1.FederatedObjectStatus, manager string) v1alpha1.FederatedObjectStatus {
	var out v1alpha1.FederatedObjectStatus
	switch manager {
	case v1alpha1.FieldManagerSchedule:
		out.Conditions = conditions(st.Conditions, v1alpha1.ConditionScheduled)
		out.ScheduledClusters, out.Placement, out.SchedulingBasis = st.ScheduledClusters, st.Placement, st.SchedulingBasis
	case v1alpha1.FieldManagerPropagate:
		out.Conditions = conditions(st.Conditions, v1alpha1.ConditionPropagated)
		out.ObservedGeneration, out.Clusters = st.ObservedGeneration, st.Clusters
	case v1alpha1.FieldManagerMigrate:
		out.CapacityLimits = st.CapacityLimits
	case v1alpha1.FieldManagerRollout:
		out.Conditions = conditions(st.Conditions, v1alpha1.ConditionRolledOut)
		out.Rollout = st.Rollout
	}
	return out
}

// Condition returns cond as it is to be written to st: its last
// transition time is kept while its status stays the same, as
// meta.SetStatusCondition does.
func Condition(st v1alpha1.FederatedObjectStatus, cond metav1.Condition) metav1.Condition {
	if old := meta.FindStatusCondition(st.Conditions, cond.Type); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	} else if cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = metav1.Now()
	}
	return cond
}

func conditions(all []metav1.Condition, typ string) []metav1.Condition {
	if c := meta.FindStatusCondition(all, typ); c != nil {
		return []metav1.Condition{*c}
	}
	return nil
}

// metadata identifies fo in an apply body, with the resourceVersion of a
// conditional write.
func metadata(fo *v1alpha1.FederatedObject, resourceVersion string) map[string]any {
	md := map[string]any{"name": fo.Name, "namespace": fo.Namespace, "uid": fo.UID}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	return md
}
