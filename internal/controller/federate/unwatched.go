package federate

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// unwatchedRetry is when the host is asked again about an object whose
// kind the host no longer serves, when it could not say.
const unwatchedRetry = 30 * time.Second

// unwatchedKind reconciles an object whose kind the template cache does
// not watch. Without a FederatedObject there is nothing to do: a kind
// watched later brings its objects back through the cache. A kind the
// host serves but the cache does not watch (the controller-manager may
// not) is left until it is watched again: nothing is asked of the host for
// it. A kind the host no longer serves (a CRD deleted, its objects with it)
// gets its objects' fate from the host (templates.Cache.ReadUnwatched);
// removed, they are released as any deleted object is, so that their
// FederatedObjects do not stay behind (the host's garbage collector does
// not collect dependents whose owner's kind it cannot find).
func (r *Reconciler) unwatchedKind(ctx context.Context, key templates.Key) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, key.FederatedName(), fo); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if templates.KeyOfReference(fo.Spec.Template) != key || !fo.DeletionTimestamp.IsZero() || r.APIReader == nil || r.Templates.Serves(key.GroupKind()) {
		// Another object's; on its way out (the propagate controller's
		// cleanup asks the host itself); or a kind served but not
		// watched.
		return reconcile.Result{}, nil
	}
	live, err := r.Templates.ReadUnwatched(ctx, r.APIReader, fo.Spec.Template)
	switch {
	case err != nil:
		if !errors.Is(err, templates.ErrNotSynced) {
			if _, seen := r.unwatchedNoted.LoadOrStore(fo.UID, "waiting"); !seen {
				ctrl.LoggerFrom(ctx).Info("Keeping a FederatedObject whose host object's fate is not known yet", "object", key, "reason", err.Error())
			}
		}
		return reconcile.Result{RequeueAfter: templates.RetryAfter(err, unwatchedRetry)}, nil
	case live != nil:
		return reconcile.Result{RequeueAfter: unwatchedRetry}, nil // served again soon
	}
	mode := goneRelease(fo.Annotations[v1alpha1.AnnotationRelease], r.Templates.LastSeenOrphan(key, fo.Spec.Template.UID))
	if prev, _ := r.unwatchedNoted.Swap(fo.UID, "removed"); prev != "removed" {
		ctrl.LoggerFrom(ctx).Info("Host object removed with its kind", "object", key, "memberCopies", mode)
	}
	return r.result(r.deleteFederatedObject(ctx, fo, mode))
}
