package federate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// unwatchedRetry is when an object whose kind the cache does not watch,
// but whose FederatedObject lives, is looked at again.
const unwatchedRetry = 30 * time.Second

// unwatchedKind reconciles an object whose kind the template cache does
// not watch: one not discovered yet, one the controller-manager may not
// watch, or one the host no longer serves (a CRD deleted, its objects with
// it). Without a FederatedObject there is nothing to do: a kind discovered
// later brings its objects back through the cache. With one, the host is
// asked about the object; gone (or its kind gone), it is released as any
// deleted object is, so that deleting a CRD deletes the member copies of
// its objects (or keeps those whose final state asked to) instead of
// leaving their FederatedObjects behind.
func (r *Reconciler) unwatchedKind(ctx context.Context, key templates.Key) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, key.FederatedName(), fo); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if templates.KeyOfReference(fo.Spec.Template) != key || !fo.DeletionTimestamp.IsZero() {
		// Another object's, or on its way out: the propagate controller's
		// cleanup asks the host itself.
		return reconcile.Result{}, nil
	}
	if r.APIReader == nil {
		return reconcile.Result{RequeueAfter: unwatchedRetry}, nil
	}
	live, err := templates.ReadLive(ctx, r.APIReader, fo.Spec.Template)
	switch {
	case templates.Gone(err), err == nil && live.GetUID() != fo.Spec.Template.UID:
		mode := goneRelease(fo.Annotations[v1alpha1.AnnotationRelease], r.Templates.LastSeenOrphan(key, fo.Spec.Template.UID))
		ctrl.LoggerFrom(ctx).Info("Host object gone while its kind is not watched", "object", key, "memberCopies", mode)
		return r.result(r.deleteFederatedObject(ctx, fo, mode))
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("read %s, whose kind the cache does not watch: %w", key, err)
	}
	// Alive: its kind is not discovered yet, or not watched.
	return reconcile.Result{RequeueAfter: unwatchedRetry}, nil
}
