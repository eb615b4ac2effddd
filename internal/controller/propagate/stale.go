package propagate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// The garbage collector and the namespace controller delete a
// FederatedObject from their own watches of the host, which may run ahead
// of the template cache's. The cleanup of such a FederatedObject may then
// find its template still alive in the cache, and a live template means
// "no longer selected: keep the copies". Before it keeps them on the
// cache's word, the cleanup asks the host; when the host has deleted the
// template (or begun to, or its namespace), the cache's delete event is on
// its way, and the cleanup looks again once the cache has it, so that the
// final state the cache remembers decides (templates.Cache.LastSeenOrphan).

// cacheCatchUp is when a cleanup waiting for the template cache looks
// again; the template's event in the cache brings it back sooner.
const cacheCatchUp = 2 * time.Second

// cacheBehind reports whether the host has deleted, or begun to delete,
// the template the cache still holds alive (tmpl), or its namespace.
func (r *Reconciler) cacheBehind(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (bool, error) {
	if r.APIReader == nil {
		return false, nil
	}
	live, err := r.readLive(ctx, fo.Spec.Template)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return true, nil // gone, or its kind is (a CRD being deleted)
	case err != nil:
		return false, err
	case live.GetUID() != tmpl.GetUID() || !live.GetDeletionTimestamp().IsZero():
		return true, nil
	case tmpl.GetNamespace() == "":
		return false, nil
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: tmpl.GetNamespace()}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("read namespace %s: %w", tmpl.GetNamespace(), err)
	}
	return !ns.DeletionTimestamp.IsZero(), nil
}

// readLive reads a template from the host. The controller-manager may
// list and watch every kind the cache holds, but get only those its role
// names: a refused get is asked again as a list by name.
func (r *Reconciler) readLive(ctx context.Context, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if !apierrors.IsForbidden(err) {
		if err != nil && !apierrors.IsNotFound(err) {
			err = fmt.Errorf("read %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		return u, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(ref.APIVersion)
	list.SetKind(ref.Kind + "List")
	if err := r.APIReader.List(ctx, list, client.InNamespace(ref.Namespace), client.MatchingFields{"metadata.name": ref.Name}); err != nil {
		return nil, fmt.Errorf("list %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(u.GroupVersionKind().GroupVersion().WithResource(ref.Kind).GroupResource(), ref.Name)
	}
	return &list.Items[0], nil
}
