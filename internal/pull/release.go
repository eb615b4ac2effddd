package pull

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// The agent deletes a copy only when the hub marked its intent
// (v1alpha1.AnnotationRelease: v1alpha1.ReleaseDelete) before deleting it.
// An intent deleted any other way (by hand, with `kubectl delete
// clusterintents --all`, or with the ClusterIntent CRD, whose deletion
// deletes every intent of every pull member at once) says nothing about
// its object, and the agent keeps the copy.

// markRelease marks the intent name (of uid, when known: a precondition
// that an intent recreated under the name is refused) for the deletion of
// its copy.
func (s *Session) markRelease(ctx context.Context, name string, uid types.UID) error {
	md := map[string]any{"annotations": map[string]any{v1alpha1.AnnotationRelease: v1alpha1.ReleaseDelete}}
	if uid != "" {
		md["uid"] = string(uid)
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	ci := &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name}}
	if err := s.cfg.Client.Patch(ctx, ci, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("mark the intent %s/%s for the deletion of its copy: %w", s.namespace, name, err)
	}
	return nil
}

// deleteIntent marks the intent (markRelease) and deletes it. The mark is
// sent even when the cache shows it: a rewrite may have dropped it since.
// A NotFound of either write is returned as such.
func (s *Session) deleteIntent(ctx context.Context, name string, uid types.UID) error {
	if err := s.markRelease(ctx, name, uid); err != nil {
		return err
	}
	var pre client.Preconditions
	if uid != "" {
		pre.UID = &uid
	}
	ci := &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name}}
	if err := s.cfg.Client.Delete(ctx, ci, pre); err != nil {
		return fmt.Errorf("delete the intent %s/%s: %w", s.namespace, name, err)
	}
	return nil
}

// releaseMarked reports whether an intent carries the hub's mark.
func releaseMarked(annotations map[string]string) bool {
	return annotations[v1alpha1.AnnotationRelease] == v1alpha1.ReleaseDelete
}
