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

// unwatchedRetry is when an object whose kind the cache does not watch,
// and whose FederatedObject lives, is looked at again: the cache's events
// bring it back sooner when it watches the kind again.
const unwatchedRetry = 5 * time.Minute

// unwatchedKind reconciles an object whose kind the template cache does
// not watch. Without a FederatedObject there is nothing to do: a kind
// watched later brings its objects back through the cache. With one, and a
// kind the host no longer serves, the object's fate comes from the host
// (templates.Cache.ReadUnwatched); removed with its CRD, it is released as
// any deleted object is, so that its FederatedObject does not stay behind
// (the host's garbage collector does not collect dependents whose owner's
// kind it cannot find). A kind served but not watched (the
// controller-manager may not) is only looked at again now and then,
// without asking the host.
func (r *Reconciler) unwatchedKind(ctx context.Context, key templates.Key) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, key.FederatedName(), fo); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if templates.KeyOfReference(fo.Spec.Template) != key || !fo.DeletionTimestamp.IsZero() {
		// Another object's, or on its way out (the propagate controller's
		// cleanup asks the host itself).
		return reconcile.Result{}, nil
	}
	if r.Templates.Serves(key.GroupKind()) {
		return reconcile.Result{RequeueAfter: unwatchedRetry}, nil
	}
	live, err := r.Templates.ReadUnwatched(ctx, fo.Spec.Template)
	switch {
	case err != nil:
		if !errors.Is(err, templates.ErrNotSynced) {
			// Once per kind: every object of it says the same.
			if _, seen := r.unwatchedNoted.LoadOrStore(key.GroupKind(), true); !seen {
				ctrl.LoggerFrom(ctx).Info("Keeping the FederatedObjects of a kind the host no longer serves", "kind", key.GroupKind(), "reason", err.Error())
			}
		}
		return reconcile.Result{RequeueAfter: templates.RetryAfter(err, unwatchedRetry)}, nil
	case live != nil:
		return reconcile.Result{RequeueAfter: unwatchedRetry}, nil
	}
	keep, err := goneKeepsCopies(ctx, r.Templates, key, fo)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Keeping the copies of a gone object until its kind's CRD can be read", "reason", err.Error())
		return reconcile.Result{RequeueAfter: templates.RetryAfter(err, unwatchedRetry)}, nil
	}
	mode := goneRelease(fo.Annotations[v1alpha1.AnnotationRelease], keep)
	ctrl.LoggerFrom(ctx).Info("Host object removed with its kind's CRD", "object", key, "memberCopies", mode)
	return r.result(r.deleteFederatedObject(ctx, fo, mode))
}
