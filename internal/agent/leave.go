package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// leaving reports whether the member's intents are going away with the
// member rather than one by one, and why: its MemberCluster is gone or
// being deleted, or the hub namespace of its intents is being deleted
// (by `flotilla unjoin`, or by mistake). The member then keeps its copies,
// as a push member does when it leaves: an intent deleted this way says
// nothing about its object, and one mistaken deletion must not empty the
// member. It reads the hub directly, not a cache: the agent may get only
// its own MemberCluster and namespace. A namespace it may not read (the
// access of an agent joined before it was granted) is not taken as
// leaving; any other error is returned, and nothing is deleted meanwhile.
func (r *Reconciler) leaving(ctx context.Context) (string, error) {
	mc := &v1alpha1.MemberCluster{}
	switch err := r.HubReader.Get(ctx, types.NamespacedName{Name: r.Cluster}, mc); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("MemberCluster %s is gone", r.Cluster), nil
	case err != nil:
		return "", fmt.Errorf("read MemberCluster %s: %w", r.Cluster, err)
	case !mc.DeletionTimestamp.IsZero():
		return fmt.Sprintf("MemberCluster %s is being deleted", r.Cluster), nil
	}
	ns := &corev1.Namespace{}
	switch err := r.HubReader.Get(ctx, types.NamespacedName{Name: r.namespace}, ns); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the hub namespace %s is gone", r.namespace), nil
	case apierrors.IsForbidden(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read namespace %s: %w", r.namespace, err)
	case !ns.DeletionTimestamp.IsZero():
		return fmt.Sprintf("the hub namespace %s is being deleted", r.namespace), nil
	}
	return "", nil
}

// unmarked says why an intent being deleted does not delete its copy when
// the hub did not mark it (v1alpha1.AnnotationRelease: ReleaseDelete), and
// "" when it did. The hub marks an intent before it deletes it; an intent
// deleted any other way (by hand, or with the ClusterIntent CRD, which
// deletes every pull member's intents at once) says nothing about its
// object, and one mistaken deletion must not empty the members.
func unmarked(ci *v1alpha1.ClusterIntent) string {
	if ci.Annotations[v1alpha1.AnnotationRelease] == v1alpha1.ReleaseDelete {
		return ""
	}
	return fmt.Sprintf("the intent was deleted without the hub's %s: %s (by hand, or with its CRD)", v1alpha1.AnnotationRelease, v1alpha1.ReleaseDelete)
}
