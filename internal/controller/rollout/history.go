package rollout

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The host keeps a Deployment's revision history as kubectl expects it:
// one ReplicaSet per revision of the pod template, controlled by the
// Deployment, with 0 replicas (the host runs no pods: its
// kube-controller-manager runs no ReplicaSet controller) and the
// revision annotation. `kubectl rollout history` lists them and `kubectl
// rollout undo` copies one's template back into the Deployment, which
// rolls out like any other change. The members' Deployments keep their
// own ReplicaSets; these are never propagated (policy.Ignored).

// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=create;update;delete

// Annotations and labels of a revision's ReplicaSet, as the Deployment
// controller sets them.
const (
	annotationRevision = "deployment.kubernetes.io/revision"
	labelTemplateHash  = appsv1.DefaultDeploymentUniqueLabelKey
)

// defaultHistory is a Deployment's default revisionHistoryLimit.
const defaultHistory = 10

// recordRevision makes the host hold the ReplicaSet of tmpl's current
// pod template as its newest revision, and prunes revisions beyond the
// Deployment's revisionHistoryLimit.
func (r *Reconciler) recordRevision(ctx context.Context, tmpl *unstructured.Unstructured, revision string) error {
	dep := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl.Object, dep); err != nil {
		return fmt.Errorf("read Deployment %s/%s: %w", tmpl.GetNamespace(), tmpl.GetName(), err)
	}
	// The template cache holds the host's ReplicaSets already (it watches
	// every kind): no second cache of them.
	list, err := r.Templates.List(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, dep.Namespace)
	if err != nil {
		return err
	}
	var owned []*appsv1.ReplicaSet
	newest := int64(0)
	var current *appsv1.ReplicaSet
	for _, u := range list {
		if !controlledBy(u, dep.UID) {
			continue
		}
		rs := &appsv1.ReplicaSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rs); err != nil {
			continue
		}
		owned = append(owned, rs)
		n := revisionOf(rs)
		if rs.Labels[labelTemplateHash] == revision {
			current = rs
		} else {
			newest = max(newest, n)
		}
	}
	switch {
	case current == nil:
		rs := historyReplicaSet(dep, revision, newest+1)
		if err := r.Client.Create(ctx, rs); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("record revision %d of %s/%s: %w", newest+1, dep.Namespace, dep.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Recorded revision", "deployment", dep.Name, "revision", newest+1, "replicaSet", rs.Name)
		owned = append(owned, rs)
	case revisionOf(current) <= newest:
		// An earlier template back (kubectl rollout undo): its revision
		// becomes the newest, as on a single cluster.
		current = current.DeepCopy()
		if current.Annotations == nil {
			current.Annotations = map[string]string{}
		}
		current.Annotations[annotationRevision] = strconv.FormatInt(newest+1, 10)
		if err := r.Client.Update(ctx, current); err != nil {
			return fmt.Errorf("renumber revision of %s/%s: %w", dep.Namespace, dep.Name, err)
		}
	}
	return r.prune(ctx, dep, owned, revision)
}

// prune deletes the oldest revisions beyond revisionHistoryLimit (never
// the current one).
func (r *Reconciler) prune(ctx context.Context, dep *appsv1.Deployment, owned []*appsv1.ReplicaSet, revision string) error {
	limit := defaultHistory
	if dep.Spec.RevisionHistoryLimit != nil {
		limit = int(*dep.Spec.RevisionHistoryLimit)
	}
	var old []*appsv1.ReplicaSet
	for _, rs := range owned {
		if rs.Labels[labelTemplateHash] != revision {
			old = append(old, rs)
		}
	}
	if len(old) <= limit {
		return nil
	}
	slices.SortFunc(old, func(a, b *appsv1.ReplicaSet) int { return int(revisionOf(a) - revisionOf(b)) })
	for _, rs := range old[:len(old)-limit] {
		// Preconditioned on the one read: a ReplicaSet of that name
		// created since (deleted and made again by someone else) is not
		// this revision's.
		pre := client.Preconditions{UID: &rs.UID, ResourceVersion: &rs.ResourceVersion}
		if err := r.Client.Delete(ctx, rs, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("prune revision %s of %s/%s: %w", rs.Annotations[annotationRevision], dep.Namespace, dep.Name, err)
		}
	}
	return nil
}

// historyReplicaSet is the ReplicaSet recording one revision of dep's pod
// template: the template with the hash label, controlled by dep, no
// replicas.
func historyReplicaSet(dep *appsv1.Deployment, hash string, revision int64) *appsv1.ReplicaSet {
	tmpl := *dep.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, labelTemplateHash, hash)
	sel := dep.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	sel.MatchLabels = withLabel(sel.MatchLabels, labelTemplateHash, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   dep.Namespace,
			Name:        dep.Name + "-" + hash[:10],
			Labels:      tmpl.Labels,
			Annotations: map[string]string{annotationRevision: strconv.FormatInt(revision, 10)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: new(true),
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(0)), Selector: sel, Template: tmpl},
	}
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for lk, lv := range labels {
		out[lk] = lv
	}
	out[k] = v
	return out
}

// revisionOf is a ReplicaSet's revision annotation (0 when absent).
func revisionOf(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[annotationRevision], 10, 64)
	return n
}

// controlledBy reports whether u's controller has uid, without decoding u.
func controlledBy(u *unstructured.Unstructured, uid types.UID) bool {
	refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
	for _, r := range refs {
		m, _ := r.(map[string]any)
		if c, _ := m["controller"].(bool); c && m["uid"] == string(uid) {
			return true
		}
	}
	return false
}
