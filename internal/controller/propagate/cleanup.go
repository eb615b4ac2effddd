package propagate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/recovery"
	"github.com/flotilla-io/flotilla/internal/templates"
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
	if r.outlivedByProtected(ctx, fo, tmpl) {
		// The template's events bring it back; the period is a backstop.
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	keep, alive, err := r.orphans(ctx, fo, tmpl)
	if err != nil {
		// Not known yet: the copies stay meanwhile.
		ctrl.LoggerFrom(ctx).V(1).Info("Keeping the copies until the host object's fate is known", "reason", err.Error())
		return reconcile.Result{RequeueAfter: templates.RetryAfter(err, 5*time.Second)}, nil
	}
	if keep && alive {
		// Only the cache says the template lives: make sure before keeping
		// copies that the host may have deleted.
		behind, err := r.cacheBehind(ctx, fo, tmpl)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("before keeping the copies of %s/%s: %w", fo.Namespace, fo.Name, err)
		}
		if behind {
			return reconcile.Result{RequeueAfter: cacheCatchUp}, nil
		}
	}
	if !keep {
		if held, what := r.namespaceHeld(fo); held != "" {
			// The protected object's events do not reach this
			// FederatedObject: the period brings it back (a look at the
			// template cache's indexes, no request).
			r.noteHeld(ctx, fo, what, held)
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
		if res, done := r.deleteCopies(ctx, fo, tmpl); !done {
			return res, nil
		}
	}
	controllerutil.RemoveFinalizer(fo, v1alpha1.FinalizerCleanup)
	if err := r.Client.Update(ctx, fo); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return reconcile.Result{}, fmt.Errorf("remove finalizer of %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	r.unknownFate.Delete(fo.UID)
	r.heldNoted.Delete(fo.UID)
	return reconcile.Result{}, nil
}

// namespaceHeld says why the member copies of a host Namespace that is
// gone must stay, or "", and what holds them (the protected object, or
// "unknown" while the cache cannot tell): an object in it is still stored and protected
// from deletion (the namespace's finalization was forced while the
// protection held it Terminating), and deleting a member namespace
// deletes that object's copies in it. A namespace of that name created
// again counts only the objects from before it. While the template cache
// cannot tell (a kind still listing, or stalled), the copies stay too.
func (r *Reconciler) namespaceHeld(fo *v1alpha1.FederatedObject) (why, what string) {
	ref := fo.Spec.Template
	if ref.APIVersion != "v1" || ref.Kind != "Namespace" {
		return "", ""
	}
	var before time.Time
	if n, err := r.Templates.Get(templates.Key{Kind: "Namespace", Name: ref.Name}); err == nil && n != nil && n.GetUID() != ref.UID {
		before = n.GetCreationTimestamp().Time
	}
	key, ok, err := r.Templates.ProtectedIn(ref.Name, before)
	switch {
	case err != nil:
		return fmt.Sprintf("the member namespaces %s stay until Flotilla can tell whether an object protected from deletion (%s) is still stored in that namespace on the host: %v",
			ref.Name, v1alpha1.AnnotationDeletionProtection, err), "unknown"
	case !ok:
		return "", ""
	}
	return fmt.Sprintf("the member namespaces %s stay while %s %s/%s, protected from deletion (%s), is still in it on the host (the namespace's finalization was forced?); they are deleted once it is gone",
		ref.Name, key.Kind, key.Namespace, key.Name, v1alpha1.AnnotationDeletionProtection), key.String()
}

// noteHeld logs and records why the cleanup of a FederatedObject keeps
// the copies for now: once for each thing (what) that holds them, so that
// "cannot tell yet" is followed by the protected object once it is known,
// not every pass.
func (r *Reconciler) noteHeld(ctx context.Context, fo *v1alpha1.FederatedObject, what, why string) {
	if prev, seen := r.heldNoted.Swap(fo.UID, what); seen && prev == what {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Cleanup waiting: " + why)
	if r.Recorder != nil {
		r.Recorder.Eventf(fo, nil, corev1.EventTypeWarning, ReasonCleanupWaiting, "Delete", "%s", why)
	}
}

// orphans decides whether a deleted FederatedObject's member copies stay;
// alive says it is only because the template lives on (in the cache). An
// error says it cannot be told yet. The
// federate controller records its reason (AnnotationRelease). A
// FederatedObject deleted by someone else (the namespace controller, the
// garbage collector, a user) keeps its copies unless the host object or
// its namespace is being deleted, or the host object is gone; a host
// object that is gone keeps them if its final state asked to (the garbage
// collector may delete the FederatedObject before federate has recorded an
// orphan annotation set just before the delete).
func (r *Reconciler) orphans(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (keep, alive bool, err error) {
	switch fo.Annotations[v1alpha1.AnnotationRelease] {
	case v1alpha1.ReleaseOrphan:
		return true, false, nil
	case v1alpha1.ReleaseDelete:
		return false, false, nil
	}
	if tmpl == nil {
		keep, err := r.Templates.GoneKeepsCopies(ctx, templates.KeyOfReference(fo.Spec.Template), fo.Spec.Template.UID,
			fo.Annotations[v1alpha1.AnnotationTemplateProtected] == "true")
		return keep, false, err
	}
	if !tmpl.GetDeletionTimestamp().IsZero() || r.namespaceDeleting(tmpl) {
		return r.Templates.DeletingKeepsCopies(tmpl), false, nil
	}
	return true, true, nil
}

// outlivedByProtected reports whether fo was deleted with its namespace
// while its host object, protected from deletion, lives on: the namespace
// controller deletes both, and the protection refuses only the host
// object's deletion. Its copies keep running and fo keeps its finalizer
// until the host object goes (its deletion decides about the copies
// then), so that deleting a namespace never takes a protected workload
// out of the members. A release recorded as ReleaseOrphan keeps the
// copies anyway.
func (r *Reconciler) outlivedByProtected(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) bool {
	if tmpl == nil || !tmpl.GetDeletionTimestamp().IsZero() || !v1alpha1.DeletionProtected(tmpl.GetAnnotations()) ||
		fo.Annotations[v1alpha1.AnnotationRelease] == v1alpha1.ReleaseOrphan || tmpl.GetNamespace() == "" {
		return false
	}
	// The namespace controller may delete fo before the template cache
	// has seen its namespace's deletion: namespaceGoing asks the host.
	return r.namespaceGoing(ctx, tmpl.GetNamespace())
}

// namespaceGoing reports whether namespace ns is being deleted, by the
// template cache or else by the host (whose answer may be newer).
func (r *Reconciler) namespaceGoing(ctx context.Context, ns string) bool {
	if n, err := r.Templates.Get(templates.Key{Kind: "Namespace", Name: ns}); err == nil && n != nil && !n.GetDeletionTimestamp().IsZero() {
		return true
	}
	got := &corev1.Namespace{}
	if r.APIReader == nil || r.APIReader.Get(ctx, client.ObjectKey{Name: ns}, got) != nil {
		return false
	}
	return !got.DeletionTimestamp.IsZero()
}

// namespaceDeleting reports whether the namespace of a namespaced
// template is being deleted.
func (r *Reconciler) namespaceDeleting(tmpl *unstructured.Unstructured) bool {
	ns := tmpl.GetNamespace()
	if ns == "" {
		return false
	}
	n, err := r.Templates.Get(templates.Key{Kind: "Namespace", Name: ns})
	return err == nil && n != nil && !n.GetDeletionTimestamp().IsZero()
}

// deleteCopies deletes the copies in every cluster, all clusters at once,
// each as a flight. done is false while some are still being deleted or
// failed (res says when to look again).
func (r *Reconciler) deleteCopies(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (res reconcile.Result, done bool) {
	key := types.NamespacedName{Namespace: fo.Namespace, Name: fo.Name}
	clusters := clustersOf(fo)
	if kind, ok := r.Templates.Lookup(templates.KeyOfReference(fo.Spec.Template).GroupKind()); ok {
		recorded := slices.Clone(clusters)
		known := func(c string) bool { return slices.Contains(recorded, c) }
		clusters = append(clusters, copies.Unrecorded(r.Pool, known, kind.GVR, fo.Spec.Template.Namespace, fo.Spec.Template.Name)...)
	}
	outcomes := make([]outcome, len(clusters))
	var wg sync.WaitGroup
	for i, name := range clusters {
		wg.Go(func() {
			err := recovery.Run(ctrl.LoggerFrom(ctx), Name, func() { outcomes[i] = r.cleanupCluster(ctx, fo, tmpl, key, name) })
			if err != nil {
				outcomes[i] = outcome{cluster: name, problem: err.Error()}
			}
		})
	}
	wg.Wait()
	var failed []string
	waiting := false
	for _, o := range outcomes {
		waiting = waiting || o.waiting
		if o.problem != "" {
			failed = append(failed, o.cluster+": "+o.problem)
		}
	}
	switch {
	case len(failed) > 0:
		ctrl.LoggerFrom(ctx).Info("Deleting member copies failed; retrying", "errors", failed)
		return reconcile.Result{RequeueAfter: 5 * time.Second}, false
	case waiting:
		return reconcile.Result{RequeueAfter: time.Second}, false
	}
	return reconcile.Result{}, true
}

// clustersOf returns the clusters that may hold a copy.
func clustersOf(fo *v1alpha1.FederatedObject) []string {
	var names []string
	for _, p := range fo.Placement() {
		names = append(names, p.Cluster)
	}
	for _, c := range fo.Status.Clusters {
		names = append(names, c.Cluster)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// outcome is how the deletion of one cluster's copy went.
type outcome struct {
	cluster, problem string
	waiting          bool
}

// cleanupCluster deletes the copy in one cluster as a flight and says how
// it went.
func (r *Reconciler) cleanupCluster(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, key types.NamespacedName, name string) outcome {
	o := outcome{cluster: name}
	mc := &v1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if !apierrors.IsNotFound(err) {
			o.problem = err.Error()
		}
		return o // a cluster that left the federation keeps nothing of ours to delete
	}
	sess, why := r.session(mc, name)
	switch {
	case why == noSessionYet:
		o.waiting = true
		return o
	case sess == nil:
		msg := fmt.Sprintf("%s: the copy was not deleted: %s", name, why)
		if r.releaseIntent(ctx, fo, mc, name) {
			msg = fmt.Sprintf("%s: %s; the cluster's agent deletes the copy when it is back", name, why)
		}
		// Said in the log and, on the host object (gone or not: the event
		// names it), by a Warning event: nothing else will show it.
		ctrl.LoggerFrom(ctx).Info("Leaving the member copy", "cluster", name, "reason", why)
		r.event(eventTarget(fo, tmpl), corev1.EventTypeWarning, "CopyLeft", "Delete", msg)
		return o
	}
	job := func() result {
		outcome, err := r.delete(sess, fo)
		if err != nil && !errors.Is(err, dispatch.ErrConflict) {
			return result{status: v1alpha1.ClusterPropagationStatus{Cluster: name, Reason: v1alpha1.PropagationDeleting, Message: err.Error()}}
		}
		return result{drop: true, outcome: string(outcome)}
	}
	res, finished := r.flights.run(flightKey{fo: key, cluster: name}, "cleanup", r.waitBudget(), job, r.wake(key))
	switch {
	case !finished:
		o.waiting = true
	case !res.drop:
		o.problem = res.status.Message
	case res.outcome == string(dispatch.Deleted):
		ctrl.LoggerFrom(ctx).Info("Deleted member copy", "cluster", name)
	case res.outcome == string(dispatch.Conflict):
		ctrl.LoggerFrom(ctx).Info("Left the member's object: Flotilla does not manage it", "cluster", name)
	default:
		// Absent: none was there, or a pull cluster's agent deleted it.
		ctrl.LoggerFrom(ctx).Info("Member copy gone", "cluster", name)
	}
	return o
}

// releaseIntent deletes, without waiting for its agent, the intent of the
// object in a pull cluster that is not Ready (and not leaving the
// federation): the hub holds it, so the agent, once back, deletes the copy
// rather than keep applying an intent nothing owns. It reports whether the
// intent is deleted (or there was none).
func (r *Reconciler) releaseIntent(ctx context.Context, fo *v1alpha1.FederatedObject, mc *v1alpha1.MemberCluster, name string) bool {
	if mc.Spec.SyncMode != v1alpha1.SyncModePull || !mc.DeletionTimestamp.IsZero() {
		return false
	}
	sess := r.Pool.Current(name)
	if sess == nil {
		return false
	}
	_, err := r.delete(sess, fo)
	if err != nil && !errors.Is(err, member.ErrAwaitingAgent) {
		ctrl.LoggerFrom(ctx).Error(err, "Deleting the intent of a cluster that is not Ready", "cluster", name)
		return false
	}
	return true
}

// eventTarget is what a cleanup's event is recorded on: the host object,
// or, once it is gone, a reference to it built from the FederatedObject
// (the event still names the object the user deleted).
func eventTarget(fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) *unstructured.Unstructured {
	if tmpl != nil {
		return tmpl
	}
	ref := fo.Spec.Template
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	u.SetUID(ref.UID)
	return u
}
