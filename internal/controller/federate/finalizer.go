package federate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Earlier versions put a finalizer (v1alpha1.FinalizerPropagation) on
// every template. Flotilla no longer does: the FederatedObject's own
// finalizer holds the cleanup. Templates of hosts upgraded from such a
// version may still carry it; the federate controller takes it off a live
// template with one patch, and off a deleted one once its FederatedObject
// is gone (the release waits for the copies, as it always did).

// ReasonFinalizerNotRemoved is the reason of the Warning event recorded
// on a template whose legacy finalizer the controller-manager may not
// remove.
const ReasonFinalizerNotRemoved = "FinalizerNotRemoved"

// hasFinalizer reports whether tmpl carries the legacy finalizer.
func hasFinalizer(tmpl *unstructured.Unstructured) bool {
	return controllerutil.ContainsFinalizer(tmpl, v1alpha1.FinalizerPropagation)
}

// dropLegacyFinalizer removes the legacy finalizer from a live template.
// A failure other than a conflict is recorded once (log and Warning
// event) and does not stop propagation: the finalizer only matters when
// the template is deleted, and that path tries again.
func (r *Reconciler) dropLegacyFinalizer(ctx context.Context, key templates.Key, tmpl *unstructured.Unstructured) error {
	err := r.removeFinalizer(ctx, tmpl)
	if err == nil || errors.Is(err, errRetry) {
		r.finalizerNoted.Delete(key)
		return err
	}
	seen := string(tmpl.GetUID())
	if prev, loaded := r.finalizerNoted.Swap(key, seen); loaded && prev == seen {
		return nil
	}
	ctrl.LoggerFrom(ctx).Error(err, "Removing the legacy finalizer; deleting the object will wait for it", "object", key, "finalizer", v1alpha1.FinalizerPropagation)
	r.event(tmpl, corev1.EventTypeWarning, ReasonFinalizerNotRemoved, "RemoveFinalizer", fmt.Sprintf(
		"the finalizer %s of an earlier Flotilla version could not be removed (%v); deleting this object waits until the controller-manager may patch it (for an upgrade: config/rbac/legacy-finalizer.yaml) or the finalizer is removed by hand",
		v1alpha1.FinalizerPropagation, err))
	return nil
}

// removeFinalizer takes the legacy finalizer off a template; nothing is
// written when it has none.
func (r *Reconciler) removeFinalizer(ctx context.Context, tmpl *unstructured.Unstructured) error {
	if !hasFinalizer(tmpl) {
		return nil
	}
	kept := slices.DeleteFunc(slices.Clone(tmpl.GetFinalizers()), func(f string) bool { return f == v1alpha1.FinalizerPropagation })
	return r.setFinalizers(ctx, tmpl, kept)
}

// setFinalizers writes a template's finalizers with a merge patch guarded
// by its resourceVersion; a conflict asks for a retry.
func (r *Reconciler) setFinalizers(ctx context.Context, tmpl *unstructured.Unstructured, finalizers []string) error {
	key := templates.KeyOf(tmpl)
	kind, ok := r.Templates.Lookup(key.GroupKind())
	if !ok {
		return fmt.Errorf("%s: %w", key, templates.ErrUnknownKind)
	}
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": tmpl.GetResourceVersion(),
	}})
	if err != nil {
		return fmt.Errorf("finalizer patch of %s: %w", key, err)
	}
	res := r.Dynamic.Resource(kind.GVR)
	var ri interface {
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
	} = res
	if kind.Namespaced {
		ri = res.Namespace(tmpl.GetNamespace())
	}
	_, err = ri.Patch(ctx, tmpl.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "flotilla"})
	switch {
	case apierrors.IsConflict(err):
		return errRetry
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("set finalizers of %s: %w", key, err)
	}
	return nil
}
