package propagate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
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
	live, err := r.Templates.ReadLive(ctx, fo.Spec.Template)
	switch {
	case templates.Gone(err):
		return true, nil
	case errors.Is(err, templates.ErrKindNotServed) && !r.Templates.Serves(templates.KeyOfReference(fo.Spec.Template).GroupKind()):
		// The host no longer lists the kind: the cache stops watching it
		// at once, and the cleanup then asks what became of the object.
		return true, nil
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

// unwatchedTemplate tells what became of the template of a FederatedObject
// being deleted whose kind the cache does not watch: nil when the host has
// removed it (templates.Cache.ReadUnwatched: deleted, or gone with its
// CRD; what its final state asked for is in the cache's memory,
// LastSeenOrphan). An error keeps the copies until the answer is known.
func (r *Reconciler) unwatchedTemplate(ctx context.Context, fo *v1alpha1.FederatedObject) (*unstructured.Unstructured, error) {
	return r.Templates.ReadUnwatched(ctx, fo.Spec.Template)
}

// ReasonCleanupWaiting is the reason of the Warning event on a
// FederatedObject being deleted whose host object's fate is not known yet
// (its kind unwatched, the host not saying): its copies stay meanwhile.
const ReasonCleanupWaiting = "CleanupWaiting"

// noteUnknownFate logs and records, once per FederatedObject, that its
// cleanup waits to learn what became of its host object.
func (r *Reconciler) noteUnknownFate(ctx context.Context, fo *v1alpha1.FederatedObject, err error) {
	if errors.Is(err, templates.ErrNotSynced) {
		return // the answer comes once the cache has listed
	}
	if _, seen := r.unknownFate.LoadOrStore(fo.UID, true); seen {
		return
	}
	msg := fmt.Sprintf("the member copies stay until it is known whether the host object was removed: %v", err)
	gk := templates.KeyOfReference(fo.Spec.Template).GroupKind()
	if _, seen := r.unknownFateKinds.LoadOrStore(gk, true); !seen {
		// Once per kind in the log: every object of it says the same.
		ctrl.LoggerFrom(ctx).Info("Cleanup waiting: "+msg, "kind", gk, "retryAfter", templates.RetryAfter(err, 30*time.Second))
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(fo, nil, corev1.EventTypeWarning, ReasonCleanupWaiting, "Delete", "%s", msg)
	}
}
