package federate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// addFinalizer puts Flotilla's finalizer on a template, so that deleting it
// waits for the member copies.
func (r *Reconciler) addFinalizer(ctx context.Context, tmpl *unstructured.Unstructured) error {
	if hasFinalizer(tmpl) {
		return nil
	}
	return r.setFinalizers(ctx, tmpl, append(slices.Clone(tmpl.GetFinalizers()), v1alpha1.FinalizerPropagation))
}

// removeFinalizer takes Flotilla's finalizer off a template.
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
		return err
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
