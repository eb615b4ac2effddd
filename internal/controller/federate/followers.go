package federate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// keepFollowers records, on the FederatedObject of each follower of fo (a
// workload released with its copies kept), the clusters where those
// copies stay (v1alpha1.AnnotationKeptForOrphans): the follower keeps its
// copies there, as the orphaned pods may still mount or read them. It runs
// before fo is deleted, so that the follower's placement never misses
// them.
func (r *Reconciler) keepFollowers(ctx context.Context, fo *v1alpha1.FederatedObject) error {
	clusters := heldClusters(fo, true)
	if len(clusters) == 0 {
		return nil
	}
	for _, ref := range fo.Spec.Followers {
		name := templates.Key{Kind: ref.Kind, Namespace: fo.Namespace, Name: ref.Name}.FederatedName()
		follower := &v1alpha1.FederatedObject{}
		if err := r.Client.Get(ctx, name, follower); err != nil {
			if apierrors.IsNotFound(err) {
				continue // not propagated (yet): nothing of it to keep
			}
			return fmt.Errorf("read follower %s: %w", name, err)
		}
		if !follower.DeletionTimestamp.IsZero() || follower.Spec.Policy != nil {
			continue // going, or placed by a policy of its own
		}
		patch := client.MergeFrom(follower.DeepCopy())
		if !keepIn(follower, clusters) {
			continue
		}
		if err := r.Client.Patch(ctx, follower, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("keep follower %s in %v: %w", name, fedobj.KeptForOrphans(follower), err)
		}
	}
	return nil
}

// heldClusters returns the clusters fo places, or still holds a copy in;
// with deleting, also those whose copy is being deleted (it left the
// placement earlier).
func heldClusters(fo *v1alpha1.FederatedObject, deleting bool) []string {
	var clusters []string
	for _, p := range fo.Placement() {
		clusters = append(clusters, p.Cluster)
	}
	for _, c := range fo.Status.Clusters {
		if deleting || c.Reason != v1alpha1.PropagationDeleting {
			clusters = append(clusters, c.Cluster)
		}
	}
	return clusters
}

// keepIn adds clusters to the ones fo keeps its copies in as a follower
// (v1alpha1.AnnotationKeptForOrphans), and reports whether that changed
// fo.
func keepIn(fo *v1alpha1.FederatedObject, clusters []string) bool {
	return setKept(fo, append(slices.Clone(fedobj.KeptForOrphans(fo)), clusters...))
}

// setKept sets the clusters fo keeps its copies in as a follower to
// clusters (none: the annotation goes), and reports whether that changed
// fo.
func setKept(fo *v1alpha1.FederatedObject, clusters []string) bool {
	kept := slices.Compact(slices.Sorted(slices.Values(clusters)))
	if slices.Equal(fedobj.KeptForOrphans(fo), kept) {
		return false
	}
	if len(kept) == 0 {
		delete(fo.Annotations, v1alpha1.AnnotationKeptForOrphans)
		return true
	}
	if fo.Annotations == nil {
		fo.Annotations = map[string]string{}
	}
	fo.Annotations[v1alpha1.AnnotationKeptForOrphans] = strings.Join(kept, ",")
	return true
}
