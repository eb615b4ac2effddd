// Package federate is the controller that turns host objects selected by a
// propagation policy (or referenced as followers by a propagated workload)
// into FederatedObjects, and releases them when they are no longer
// selected or are deleted.
package federate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "federate"

// ReasonPolicyNotApplicable is the reason of the Warning event recorded on
// a template whose policy label names a policy that may not select it.
const ReasonPolicyNotApplicable = "PolicyNotApplicable"

// ReasonPolicyUnreadable is the reason of the Warning event recorded on
// a template when a policy that may select it has a label selector that
// cannot be read: its federation stays as it is until the policy is fixed.
const ReasonPolicyUnreadable = "PolicyUnreadable"

// Permissions: manage FederatedObjects; read policies. Reading the
// templates is granted with the template kinds (package templates);
// patching them, only to remove the finalizer of earlier versions, only by
// the opt-in grant for upgraded hosts (config/rbac/optional.yaml).
//
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=flotilla.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps one FederatedObject per propagated host object.
type Reconciler struct {
	// Client reads policies and FederatedObjects (cached) and writes
	// FederatedObjects.
	Client client.Client
	// Dynamic removes the legacy finalizer from templates and reads
	// namespaces.
	Dynamic dynamic.Interface
	// Templates is the host template cache.
	Templates *templates.Cache
	// Recorder records events on templates.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int
	// IgnoredNamespaces are never propagated from, besides the system
	// namespaces (the credentials and leader-election namespaces).
	IgnoredNamespaces []string

	queue trigger.Queue[templates.Key]
	// notApplicable remembers, per template, the PolicyNotApplicable
	// event last recorded (UID and message), so it is recorded once, not
	// on every pass.
	notApplicable sync.Map // templates.Key → string
	// finalizerNoted remembers, per template, the UID whose legacy
	// finalizer could not be removed, so that is recorded once.
	finalizerNoted sync.Map // templates.Key → string
	// unwatchedNoted holds the kinds no longer served whose objects'
	// unknown fate was logged (unwatched.go), once each.
	unwatchedNoted sync.Map // schema.GroupKind → bool
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Templates.Subscribe(r.queue.Add)
	return builder.TypedControllerManagedBy[templates.Key](mgr).
		Named(Name).
		WatchesRawSource(r.queue.Source()).
		WatchesRawSource(policySource(mgr, r, &v1alpha1.PropagationPolicy{})).
		WatchesRawSource(policySource(mgr, r, &v1alpha1.ClusterPropagationPolicy{})).
		WatchesRawSource(federatedObjectSource(mgr)).
		WithOptions(controller.TypedOptions[templates.Key]{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// Reconcile brings one host object's FederatedObject in line with the
// policies.
func (r *Reconciler) Reconcile(ctx context.Context, key templates.Key) (reconcile.Result, error) {
	tmpl, err := r.Templates.GetSynced(ctx, key)
	switch {
	case errors.Is(err, templates.ErrNotSynced):
		return reconcile.Result{RequeueAfter: r.Templates.SyncRetry(key)}, nil
	case errors.Is(err, templates.ErrUnknownKind):
		return r.unwatchedKind(ctx, key)
	case err != nil:
		return reconcile.Result{}, err
	}
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, key.FederatedName(), fo); apierrors.IsNotFound(err) {
		fo = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if fo != nil && templates.KeyOfReference(fo.Spec.Template) != key {
		// Another object's FederatedObject has this name (names are
		// name.kind.group, which two odd names can share): leave it.
		ctrl.LoggerFrom(ctx).Error(nil, "FederatedObject name taken by another object; not propagating this one", "federatedObject", key.FederatedName(), "holder", templates.KeyOfReference(fo.Spec.Template))
		return reconcile.Result{}, nil
	}
	if tmpl == nil {
		r.notApplicable.Delete(key)
		r.finalizerNoted.Delete(key)
		if fo == nil {
			r.Templates.ForgetOrphan(key) // nothing left to decide
			return reconcile.Result{}, nil
		}
		keep, err := goneKeepsCopies(ctx, r.Templates, key, fo)
		if err != nil {
			// Not known yet (the host could not be asked): never taken
			// for "delete the copies".
			ctrl.LoggerFrom(ctx).V(1).Info("Keeping the copies of a gone object until its kind's CRD can be read", "reason", err.Error())
			return reconcile.Result{RequeueAfter: templates.RetryAfter(err, 5*time.Second)}, nil
		}
		mode := goneRelease(fo.Annotations[v1alpha1.AnnotationRelease], keep)
		return r.result(r.deleteFederatedObject(ctx, fo, mode))
	}
	if !tmpl.GetDeletionTimestamp().IsZero() {
		if isNamespace(key) && fo != nil && !keepsCopies(tmpl) {
			// A namespace being deleted: its member namespaces, whose
			// deletion deletes everything in them, stay until it is gone,
			// when each object in it has decided about its own copies (a
			// protected one keeps it terminating, and its copies running).
			return r.result(r.removeFinalizer(ctx, tmpl))
		}
		// Still there: it has finalizers (the legacy one of an earlier
		// version, or others). Released as soon as its deletion starts.
		mode := v1alpha1.ReleaseDelete
		if r.Templates.DeletingKeepsCopies(tmpl) {
			mode = v1alpha1.ReleaseOrphan
		}
		return r.result(r.release(ctx, key, tmpl, fo, mode))
	}
	decision, err := r.choose(ctx, tmpl)
	if err != nil {
		return reconcile.Result{}, err
	}
	if decision.Unreadable != "" {
		// Which policy propagates it cannot be decided: leave its
		// federation as it is (its FederatedObject, placement and copies)
		// until the policy is fixed, whose change wakes it.
		r.noteOnce(ctx, key, tmpl, ReasonPolicyUnreadable, decision.Unreadable+"; the object's federation stays as it is until the policy is fixed")
		return reconcile.Result{}, nil
	}
	chosen := decision.Chosen
	follower := false
	if chosen == nil {
		if follower, err = r.isFollower(ctx, tmpl); err != nil {
			return reconcile.Result{}, err
		}
		// Once a follower, always a follower (until deleted): when the last
		// workload referencing it goes (or stops being propagated), its
		// copies stay where they are, since pods there may still use them.
		follower = follower || (fo != nil && fo.Spec.Policy == nil && fo.DeletionTimestamp.IsZero())
	}
	r.noteNotApplicable(ctx, key, tmpl, decision.NotApplicable, follower)
	if chosen == nil && !follower {
		// No longer selected (or referenced): the copies stay, unless the
		// namespace is being deleted (its policy may simply have gone first).
		// (Without a FederatedObject there is nothing to release but a
		// legacy finalizer, and no need to ask the host about the
		// namespace.)
		mode := v1alpha1.ReleaseOrphan
		terminating := false
		if fo != nil && !keepsCopies(tmpl) {
			// A failed question is asked again, never taken for "no": the
			// copies of a namespace being deleted would be kept for good.
			if terminating, err = r.namespaceTerminating(ctx, tmpl); err != nil {
				return reconcile.Result{}, err
			}
		}
		if terminating {
			if v1alpha1.DeletionProtected(tmpl.GetAnnotations()) {
				// Protected, it outlives its namespace's deletion: its
				// FederatedObject stays, and when the namespace controller
				// deletes it, its cleanup waits for the object to go.
				return reconcile.Result{}, nil
			}
			mode = v1alpha1.ReleaseDelete
		}
		return r.result(r.release(ctx, key, tmpl, fo, mode))
	}
	if err := r.dropLegacyFinalizer(ctx, key, tmpl); err != nil {
		return r.result(err)
	}
	if fo != nil && !fo.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // selected again: recreated once the old one is gone
	}
	return r.result(r.ensure(ctx, key, tmpl, fo, chosen))
}

// namespaceTerminating reports whether tmpl's namespace is being deleted.
// The host is asked directly when the cache says no: releases are rare,
// and the cache may not have seen the namespace's deletion yet when the
// namespace controller's first deletions (a policy) arrive.
func (r *Reconciler) namespaceTerminating(ctx context.Context, tmpl *unstructured.Unstructured) (bool, error) {
	if tmpl.GetNamespace() == "" {
		return false, nil
	}
	ns, err := r.Templates.Get(templates.Key{Kind: "Namespace", Name: tmpl.GetNamespace()})
	if err == nil && ns != nil && !ns.GetDeletionTimestamp().IsZero() {
		return true, nil
	}
	live, err := r.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Get(ctx, tmpl.GetNamespace(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil // gone already: its objects are on their way out
	case err != nil:
		return false, fmt.Errorf("check whether namespace %s is being deleted: %w", tmpl.GetNamespace(), err)
	}
	return !live.GetDeletionTimestamp().IsZero(), nil
}

// errRetry asks for a quick retry: a write lost a race with another writer
// and the event that brings the object back may never come.
var errRetry = errors.New("retry")

// result turns an error into a reconcile result: errRetry requeues soon.
func (r *Reconciler) result(err error) (reconcile.Result, error) {
	if errors.Is(err, errRetry) {
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}

// choose returns the policy that propagates tmpl, if any, and why a
// policy label on it does not apply.
func (r *Reconciler) choose(ctx context.Context, tmpl *unstructured.Unstructured) (policy.Decision, error) {
	if policy.Ignored(tmpl) || slices.Contains(r.IgnoredNamespaces, tmpl.GetNamespace()) {
		return policy.Decision{}, nil
	}
	var pps v1alpha1.PropagationPolicyList
	if ns := tmpl.GetNamespace(); ns != "" {
		if err := r.Client.List(ctx, &pps, client.InNamespace(ns)); err != nil {
			return policy.Decision{}, err
		}
	}
	var cpps v1alpha1.ClusterPropagationPolicyList
	if err := r.Client.List(ctx, &cpps); err != nil {
		return policy.Decision{}, err
	}
	return policy.Decide(tmpl, pps.Items, cpps.Items), nil
}

// noteNotApplicable records a PolicyNotApplicable Warning event on tmpl
// when a policy label on it names a policy that may not select it (why),
// once per template and message: a pass that finds the same again records
// nothing. An empty why forgets the template.
func (r *Reconciler) noteNotApplicable(ctx context.Context, key templates.Key, tmpl *unstructured.Unstructured, why string, follower bool) {
	if why == "" {
		r.notApplicable.Delete(key)
		return
	}
	msg := why + "; not propagated"
	if follower {
		msg = why + "; it only follows the workloads that reference it"
	}
	r.noteOnce(ctx, key, tmpl, ReasonPolicyNotApplicable, msg)
}

// noteOnce records a Warning event with reason and msg on tmpl, once per
// template and message.
func (r *Reconciler) noteOnce(ctx context.Context, key templates.Key, tmpl *unstructured.Unstructured, reason, msg string) {
	seen := string(tmpl.GetUID()) + "|" + reason + "|" + msg
	if prev, loaded := r.notApplicable.Swap(key, seen); loaded && prev == seen {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Not deciding the object's policy", "object", key, "reason", reason, "message", msg)
	r.event(tmpl, corev1.EventTypeWarning, reason, "Propagate", msg)
}

// followerKinds are the kinds that follow workloads.
var followerKinds = map[string]bool{"ConfigMap": true, "Secret": true, "ServiceAccount": true, "PersistentVolumeClaim": true}

// isFollower reports whether a propagated workload references tmpl.
func (r *Reconciler) isFollower(ctx context.Context, tmpl *unstructured.Unstructured) (bool, error) {
	gvk := tmpl.GroupVersionKind()
	if gvk.Group != "" || !followerKinds[gvk.Kind] || tmpl.GetNamespace() == "" || policy.Ignored(tmpl) || slices.Contains(r.IgnoredNamespaces, tmpl.GetNamespace()) {
		return false, nil
	}
	leaders := &v1alpha1.FederatedObjectList{}
	if err := r.Client.List(ctx, leaders, client.InNamespace(tmpl.GetNamespace()), client.MatchingFields{fedobj.IndexFollower: fedobj.FollowerKey(gvk.Kind, tmpl.GetName())}); err != nil {
		return false, err
	}
	for _, l := range leaders.Items {
		if l.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}

// isNamespace reports whether key names a core Namespace.
func isNamespace(key templates.Key) bool {
	return key.Group == "" && key.Kind == "Namespace"
}

// keepsCopies reports whether tmpl's member copies stay when it is
// deleted (v1alpha1.KeepsCopies: AnnotationOrphan, or a suspended
// federation).
func keepsCopies(tmpl *unstructured.Unstructured) bool {
	return v1alpha1.KeepsCopies(tmpl.GetAnnotations())
}

// goneKeepsCopies is templates.Cache.GoneKeepsCopies for the template of
// fo, which is gone.
func goneKeepsCopies(ctx context.Context, c *templates.Cache, key templates.Key, fo *v1alpha1.FederatedObject) (bool, error) {
	return c.GoneKeepsCopies(ctx, key, fo.Spec.Template.UID, fo.Annotations[v1alpha1.AnnotationTemplateProtected] == "true")
}

// goneRelease decides what happens to the member copies of a template
// that is gone, from the release mode its FederatedObject records
// (ReleaseOrphan while the template asked to keep its copies) and whether
// the template cache saw its final state with AnnotationOrphan. Either keeps
// the copies: a mistake here may delete what a user asked to keep, so
// when the two disagree (the annotation removed just before the delete)
// the copies stay. Otherwise they are deleted with the template.
func goneRelease(recorded string, finalOrphan bool) string {
	if finalOrphan || recorded == v1alpha1.ReleaseOrphan {
		return v1alpha1.ReleaseOrphan
	}
	return v1alpha1.ReleaseDelete
}

// ensure creates or updates the FederatedObject. The placement is the
// scheduler's and is kept. While the template asks to keep its copies
// (AnnotationOrphan), the FederatedObject records that (AnnotationRelease:
// ReleaseOrphan), so the choice outlives the template, which is gone
// before anyone reads it once deleted.
func (r *Reconciler) ensure(ctx context.Context, key templates.Key, tmpl *unstructured.Unstructured, fo *v1alpha1.FederatedObject, chosen *policy.Chosen) error {
	kind, ok := r.Templates.Lookup(key.GroupKind())
	if !ok {
		return fmt.Errorf("%s: %w", key, templates.ErrUnknownKind)
	}
	ref := v1alpha1.TemplateReference{
		APIVersion: kind.GVK.GroupVersion().String(), Kind: kind.GVK.Kind,
		Namespace: tmpl.GetNamespace(), Name: tmpl.GetName(), UID: tmpl.GetUID(),
	}
	var policyRef *v1alpha1.PolicyReference
	var followers []v1alpha1.ObjectReference
	if chosen != nil {
		policyRef = &chosen.Ref
		if !chosen.Spec.DisableFollowers && tmpl.GetNamespace() != "" {
			followers = workload.Followers(tmpl)
		}
	}
	orphan := keepsCopies(tmpl)
	protected := v1alpha1.DeletionProtected(tmpl.GetAnnotations())
	if fo == nil {
		name := key.FederatedName()
		fo = &v1alpha1.FederatedObject{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: name.Namespace, Name: name.Name,
				Finalizers: []string{v1alpha1.FinalizerCleanup},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
				}},
			},
			Spec: v1alpha1.FederatedObjectSpec{Template: ref, Policy: policyRef, Followers: followers},
		}
		recordAnnotation(fo, v1alpha1.AnnotationRelease, v1alpha1.ReleaseOrphan, orphan)
		recordAnnotation(fo, v1alpha1.AnnotationTemplateProtected, "true", protected)
		if err := r.Client.Create(ctx, fo); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // the cache was behind; its event brings us back
			}
			return fmt.Errorf("create FederatedObject %s: %w", name, err)
		}
		// No event: the policy is on the FederatedObject (spec.policy).
		ctrl.LoggerFrom(ctx).Info("Federating object", "federatedObject", name, "policy", policyRef, "keepCopies", orphan)
		return nil
	}
	recorded := fo.Annotations[v1alpha1.AnnotationRelease] == v1alpha1.ReleaseOrphan
	recordedProtected := fo.Annotations[v1alpha1.AnnotationTemplateProtected] == "true"
	if recorded == orphan && recordedProtected == protected && equality.Semantic.DeepEqual(fo.Spec.Template, ref) &&
		equality.Semantic.DeepEqual(fo.Spec.Policy, policyRef) && equality.Semantic.DeepEqual(fo.Spec.Followers, followers) {
		return nil
	}
	policyChanged := !equality.Semantic.DeepEqual(fo.Spec.Policy, policyRef)
	fo = fo.DeepCopy()
	switch {
	case fo.Spec.Policy != nil && policyRef == nil:
		// No policy selects it any more, but a propagated workload
		// references it: from now on it follows its workloads. Where its
		// policy put it, its copies stay, as an unselected object's do
		// (pods that Flotilla does not manage may use them); they go when
		// it is deleted in the host. (Copies being deleted had left the
		// policy's placement already; copies still waiting out a graceful
		// eviction run, and stay like the others.)
		setKept(fo, heldClusters(fo, false))
	case fo.Spec.Policy == nil && policyRef != nil:
		// A policy places it from now on; what it kept as a follower is
		// the policy's to decide, and must not come back should it turn
		// into a follower again.
		setKept(fo, nil)
	}
	recordAnnotation(fo, v1alpha1.AnnotationRelease, v1alpha1.ReleaseOrphan, orphan)
	recordAnnotation(fo, v1alpha1.AnnotationTemplateProtected, "true", protected)
	fo.Spec.Template, fo.Spec.Policy, fo.Spec.Followers = ref, policyRef, followers
	fo.OwnerReferences = []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}}
	if err := r.Client.Update(ctx, fo); err != nil {
		if apierrors.IsConflict(err) {
			return errRetry
		}
		return fmt.Errorf("update FederatedObject %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	if policyChanged {
		r.event(tmpl, corev1.EventTypeNormal, "PolicyChanged", "Propagate", describePolicy(policyRef))
	}
	if recorded != orphan {
		ctrl.LoggerFrom(ctx).Info("Recorded whether the member copies stay when the object is deleted", "federatedObject", client.ObjectKeyFromObject(fo), "keepCopies", orphan)
	}
	return nil
}

// recordAnnotation sets the annotation key to value on fo when on, and
// otherwise removes it if it holds value (another value is not this
// record's).
func recordAnnotation(fo *v1alpha1.FederatedObject, key, value string, on bool) {
	switch {
	case on:
		if fo.Annotations == nil {
			fo.Annotations = map[string]string{}
		}
		fo.Annotations[key] = value
	case fo.Annotations[key] == value:
		delete(fo.Annotations, key)
	}
}

func describePolicy(ref *v1alpha1.PolicyReference) string {
	if ref == nil {
		return "Follows the workloads that reference it"
	}
	if ref.Namespace != "" {
		return fmt.Sprintf("Propagated by %s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	}
	return fmt.Sprintf("Propagated by %s %s", ref.Kind, ref.Name)
}

// release stops propagating tmpl: the FederatedObject is deleted, saying
// whether its cleanup deletes or keeps the member copies (mode), and, once
// it is gone, a legacy finalizer is removed from the template (a deleted
// template waits for that; a live one only notes a failure).
func (r *Reconciler) release(ctx context.Context, key templates.Key, tmpl *unstructured.Unstructured, fo *v1alpha1.FederatedObject, mode string) error {
	switch {
	case fo != nil:
		return r.deleteFederatedObject(ctx, fo, mode)
	case !tmpl.GetDeletionTimestamp().IsZero():
		return r.removeFinalizer(ctx, tmpl)
	}
	return r.dropLegacyFinalizer(ctx, key, tmpl)
}

// deleteFederatedObject records mode in fo, then deletes it; with
// ReleaseOrphan, fo's followers first keep their copies where fo's stay
// (keepFollowers). A FederatedObject already being deleted (by the
// garbage collector once its template is gone, or by anyone else) may have
// begun its cleanup: only a choice to keep the copies is still recorded on
// it, never one to delete them.
func (r *Reconciler) deleteFederatedObject(ctx context.Context, fo *v1alpha1.FederatedObject, mode string) error {
	if fo == nil {
		return nil
	}
	if mode == v1alpha1.ReleaseOrphan {
		if err := r.keepFollowers(ctx, fo); err != nil {
			return err
		}
	}
	if !fo.DeletionTimestamp.IsZero() {
		if mode != v1alpha1.ReleaseOrphan {
			return nil
		}
		return r.recordRelease(ctx, fo, mode)
	}
	if err := r.recordRelease(ctx, fo, mode); err != nil {
		return err
	}
	err := r.Client.Delete(ctx, fo, client.Preconditions{UID: ptr.To(fo.UID)})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete FederatedObject %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Stopped federating object", "federatedObject", client.ObjectKeyFromObject(fo), "memberCopies", mode)
	return nil
}

// recordRelease sets fo's release mode (nothing is written when it has
// it).
func (r *Reconciler) recordRelease(ctx context.Context, fo *v1alpha1.FederatedObject, mode string) error {
	if fo.Annotations[v1alpha1.AnnotationRelease] == mode {
		return nil
	}
	fo = fo.DeepCopy()
	if fo.Annotations == nil {
		fo.Annotations = map[string]string{}
	}
	fo.Annotations[v1alpha1.AnnotationRelease] = mode
	if err := r.Client.Update(ctx, fo); err != nil {
		if apierrors.IsConflict(err) {
			return errRetry
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("record release mode of FederatedObject %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	return nil
}

func (r *Reconciler) event(tmpl *unstructured.Unstructured, kind, reason, action, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(tmpl, nil, kind, reason, action, "%s", msg)
	}
}
