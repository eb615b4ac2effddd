package propagate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
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
	live, err := templates.ReadLive(ctx, r.APIReader, fo.Spec.Template)
	switch {
	case templates.Gone(err):
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

// unwatchedTemplate reads from the host the template of a FederatedObject
// being deleted whose kind the cache does not watch: nil when the host no
// longer has it, or no longer serves its kind (a deleted CRD takes its
// objects with it; what their final state asked for is in the cache's
// memory, templates.Cache.LastSeenOrphan).
func (r *Reconciler) unwatchedTemplate(ctx context.Context, fo *v1alpha1.FederatedObject) (*unstructured.Unstructured, error) {
	if r.APIReader == nil {
		return nil, fmt.Errorf("%s: %w", fo.Spec.Template.Kind, templates.ErrUnknownKind)
	}
	live, err := templates.ReadLive(ctx, r.APIReader, fo.Spec.Template)
	switch {
	case templates.Gone(err):
		return nil, nil
	case err != nil:
		return nil, err
	case live.GetUID() != fo.Spec.Template.UID:
		return nil, nil // a new object of the same name
	}
	return live, nil
}
