package propagate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flotilla-io/flotilla/internal/dispatch"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// cleanup runs when a FederatedObject is deleted. If the template is being
// deleted (or is gone) the member copies are deleted, unless the template
// says flotilla.io/orphan: "true". If the template still exists and a
// policy propagated it, it is only no longer selected, and the copies are
// left in place; a follower no workload references any more has its
// copies deleted. A cluster
// that is not Ready keeps its copy (an event says so) rather than holding
// the deletion forever.
func (r *Reconciler) cleanup(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(fo, v1alpha1.FinalizerCleanup) {
		return reconcile.Result{}, nil
	}
	orphan := tmpl != nil && (tmpl.GetAnnotations()[v1alpha1.AnnotationOrphan] == "true" ||
		// No longer selected by a policy: the copies stay.
		(tmpl.GetDeletionTimestamp().IsZero() && fo.Spec.Policy != nil))
	if !orphan {
		var failed []string
		for _, name := range clustersOf(fo) {
			mc := &v1alpha1.MemberCluster{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return reconcile.Result{}, err
			}
			sess, why := r.session(mc, name)
			if why == noSessionYet {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			if sess == nil {
				if tmpl != nil {
					r.event(tmpl, corev1.EventTypeWarning, "CopyLeft", "Delete", fmt.Sprintf("%s: the copy was not deleted: %s", name, why))
				}
				continue
			}
			outcome, err := r.delete(ctx, sess, fo)
			if err != nil && !errors.Is(err, dispatch.ErrConflict) {
				failed = append(failed, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			ctrl.LoggerFrom(ctx).Info("Deleted member copy", "cluster", name, "outcome", outcome)
		}
		if len(failed) > 0 {
			ctrl.LoggerFrom(ctx).Info("Deleting member copies failed; retrying", "errors", failed)
			return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	controllerutil.RemoveFinalizer(fo, v1alpha1.FinalizerCleanup)
	if err := r.Client.Update(ctx, fo); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return reconcile.Result{}, fmt.Errorf("remove finalizer of %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	return reconcile.Result{}, nil
}

// clustersOf returns the clusters that may hold a copy.
func clustersOf(fo *v1alpha1.FederatedObject) []string {
	var names []string
	for _, p := range fo.Spec.Placement {
		names = append(names, p.Cluster)
	}
	for _, c := range fo.Status.Clusters {
		names = append(names, c.Cluster)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
