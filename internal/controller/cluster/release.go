package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// releaseIntents runs when a MemberCluster is gone. If it was a pull
// member, the host's garbage collector removes its agent's access and hub
// namespace (`flotilla join --mode pull` made them owned by the
// MemberCluster); the intents there are let go here, without waiting for
// the agent, which can no longer act on them, so that the namespace's
// deletion completes. The member keeps its copies, as a push member does
// when it leaves. It asks to be called again while the namespace exists,
// in case an intent written meanwhile holds it.
func (r *Reconciler) releaseIntents(ctx context.Context, name string) (reconcile.Result, error) {
	ns := v1alpha1.ClusterNamespace(name)
	nsObj := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: ns}, nsObj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // a push member, or already done
	}
	if nsObj.Labels[v1alpha1.LabelMemberCluster] != name {
		return reconcile.Result{}, nil // not ours
	}
	list := &v1alpha1.ClusterIntentList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list the intents of %s: %w", name, err)
	}
	for i := range list.Items {
		ci := &list.Items[i]
		if len(ci.Finalizers) == 0 {
			continue
		}
		patch := client.MergeFrom(ci.DeepCopy())
		ci.Finalizers = nil
		if err := r.Client.Patch(ctx, ci, patch); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("release intent %s/%s: %w", ns, ci.Name, err)
		}
	}
	if nsObj.DeletionTimestamp.IsZero() && len(nsObj.OwnerReferences) == 0 {
		// Kept (the MemberCluster was deleted orphaning it, which drops
		// the owner reference the garbage collector would follow):
		// nothing will delete it, so there is nothing to watch for.
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: releaseRecheck}, nil
}

// releaseRecheck is how often a removed pull member's namespace is looked
// at until it is gone.
const releaseRecheck = 10 * time.Second
