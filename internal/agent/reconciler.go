package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
)

// Tunables of the intent reconciler.
const (
	// applyTimeout bounds one write to the member.
	applyTimeout = 30 * time.Second
	// retryAfter is when a Conflict or Failed intent is tried again.
	retryAfter = 30 * time.Second
	// reportInterval is the shortest time between two reports of the same
	// copy that differ only in the copy's state (status churn of a rolling
	// Deployment), so that they coalesce.
	reportInterval = time.Second
	// maxBackoff caps the retry of a failed hub write, so that reports
	// resume soon after a long hub outage.
	maxBackoff = 30 * time.Second
)

// Reconciler applies one cluster's ClusterIntents to its member.
type Reconciler struct {
	// Hub reads the intents (from a cache of the cluster's namespace) and
	// writes their status.
	Hub client.Client
	// HubReader reads the hub without a cache: the MemberCluster and its
	// namespace before a copy is deleted (leave.go).
	HubReader client.Reader
	// Cluster is the MemberCluster's name.
	Cluster string
	// Pool holds the session to the member (one, named Cluster).
	Pool *member.Pool
	// Workers bounds parallel reconciles (default 8).
	Workers int

	namespace string
	queue     trigger.Queue[reconcile.Request]
	mu        sync.Mutex
	reported  map[string]time.Time // intent name → last report
}

// SetupWithManager registers the reconciler, and the member copies' events
// as a source of it, with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.namespace = v1alpha1.ClusterNamespace(r.Cluster)
	r.reported = map[string]time.Time{}
	r.Pool.Subscribe(func(e member.ObjectEvent) {
		r.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: pull.IntentName(e.Resource.GroupResource(), e.Namespace, e.Name)}})
	})
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](50*time.Millisecond, maxBackoff)
	return ctrl.NewControllerManagedBy(mgr).
		Named("agent").
		For(&v1alpha1.ClusterIntent{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting{}))).
		WatchesRawSource(r.queue.Source()).
		// A process runs one agent at a time, but a test restarts it in
		// place: the name is not taken by another controller.
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, 8), RateLimiter: limiter, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// deleting passes the update that marks an intent deleted, and the hub's
// mark for the deletion of its copy on one being deleted (unmarked).
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	if e.ObjectNew.GetDeletionTimestamp().IsZero() {
		return false
	}
	release := v1alpha1.AnnotationRelease
	return e.ObjectOld.GetDeletionTimestamp().IsZero() || e.ObjectOld.GetAnnotations()[release] != e.ObjectNew.GetAnnotations()[release]
}

// Reconcile makes the member's copy hold one intent and reports it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sess := r.Pool.Get(r.Cluster)
	if sess == nil {
		return reconcile.Result{RequeueAfter: time.Second}, nil // the session is starting
	}
	ci := &v1alpha1.ClusterIntent{}
	if err := r.Hub.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	obj, gvr, err := decode(ci)
	if err != nil && !ci.DeletionTimestamp.IsZero() {
		// Nothing this intent names can be found in the member: let it
		// go, touching nothing, so that it does not hold the hub's delete.
		return r.release(ctx, ci, "its object cannot be read")
	}
	if err != nil {
		// A bad intent is reported, never retried: only a new spec helps.
		return r.report(ctx, ci, v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentFailed, Message: err.Error()})
	}
	if !ci.DeletionTimestamp.IsZero() {
		if err := matches(sess, ci, obj, gvr); err != nil {
			// The object it names may be another intent's copy.
			return r.release(ctx, ci, err.Error())
		}
		return r.remove(ctx, sess, ci, obj)
	}
	if err := matches(sess, ci, obj, gvr); err != nil {
		return r.report(ctx, ci, v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentFailed, Message: err.Error()})
	}
	if ci.Spec.Suspended {
		return r.suspended(ctx, sess, ci, obj, gvr)
	}
	in, err := dispatch.Take(obj)
	if err != nil {
		return r.report(ctx, ci, v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentFailed, Message: err.Error()})
	}
	opts := dispatch.Options{Adopt: ci.Spec.Adopt}
	for _, p := range ci.Spec.KeepLive {
		opts.KeepLive = append(opts.KeepLive, strings.Split(p, "."))
	}
	sess.WaitManaged(ctx, gvr)
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	outcome, err := sess.Apply(actx, gvr, in, opts)
	cancel()
	st := v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentApplied}
	switch {
	case errors.Is(err, member.ErrCacheSyncing):
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case errors.Is(err, dispatch.ErrConflict):
		st.Outcome, st.Message = v1alpha1.IntentConflict, err.Error()
	case err != nil:
		st.Outcome, st.Message = v1alpha1.IntentFailed, err.Error()
	case outcome != dispatch.Unchanged:
		// The copy's event brings the next pass, which finds it current in
		// the cache and reports it once.
		ctrl.LoggerFrom(ctx).Info("Applied intent", "outcome", outcome, "object", describe(obj))
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	switch live, state := sess.ManagedObject(gvr, obj.GetNamespace(), obj.GetName()); {
	case state != member.CacheSynced:
		// Not known now (the member's list of the kind has not finished;
		// Apply read the object itself): for a copy just applied, the
		// last report stands, not "no copy", which the hub would act on.
		// A Conflict or a failure reports none: an earlier copy may not
		// be what the member holds now.
		if st.Outcome == v1alpha1.IntentApplied {
			st.Copy = ci.Status.Copy
		}
	case live != nil && dispatch.Written(live):
		// Only Flotilla's copy: an object of that name that merely
		// carries the managed label (the Conflict above) is not one.
		st.Copy = reported(live)
	}
	res, werr := r.report(ctx, ci, st)
	if werr == nil && st.Outcome != v1alpha1.IntentApplied {
		res.RequeueAfter = retryAfter
	}
	return res, werr
}

// suspended reports a suspended intent's copy as the member holds it,
// writing nothing to the member: the host object's federation is
// suspended, so member-side edits stay until the hub resumes the intent.
func (r *Reconciler) suspended(ctx context.Context, sess member.Member, ci *v1alpha1.ClusterIntent, obj *unstructured.Unstructured, gvr schema.GroupVersionResource) (reconcile.Result, error) {
	sess.WaitManaged(ctx, gvr)
	st := v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentSuspended,
		Message: "federation suspended: the copy is left as the member holds it"}
	live, state := sess.ManagedObject(gvr, obj.GetNamespace(), obj.GetName())
	switch state {
	case member.CacheSyncing:
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case member.CacheStalled:
		// The member does not serve the kind, or forbids the list: the
		// copy is not known, and waiting a second at a time would not
		// change that. Reported with the copy last seen, looked at again
		// later.
		st.Copy = ci.Status.Copy // unknown now, not absent: the last report stands
		res, err := r.report(ctx, ci, st)
		if err == nil && res.RequeueAfter == 0 {
			res.RequeueAfter = retryAfter
		}
		return res, err
	}
	if live != nil && dispatch.Written(live) {
		st.Copy = reported(live)
	}
	return r.report(ctx, ci, st)
}

// remove deletes the member's copy of an intent being deleted, then lets
// the intent go. An object Flotilla does not manage is left alone, and so
// is every copy whose intent the hub did not mark for the deletion of its
// copy (deleted by hand, or with the ClusterIntent CRD: see
// pull.Session.Delete) or while the member is leaving the federation
// (leaving).
func (r *Reconciler) remove(ctx context.Context, sess member.Member, ci *v1alpha1.ClusterIntent, obj *unstructured.Unstructured) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.FinalizerAgent) {
		return reconcile.Result{}, nil
	}
	why := unmarked(ci)
	if why == "" {
		var err error
		if why, err = r.leaving(ctx); err != nil {
			return reconcile.Result{}, fmt.Errorf("before deleting %s: %w", describe(obj), err)
		}
	}
	if why != "" {
		ctrl.LoggerFrom(ctx).Info("Keeping copy: its intent is deleted, but not for the copy's deletion", "object", describe(obj), "reason", why)
	} else {
		dctx, cancel := context.WithTimeout(ctx, applyTimeout)
		outcome, err := sess.Delete(dctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
		cancel()
		if err != nil && !errors.Is(err, dispatch.ErrConflict) {
			// Said on the intent (the hub shows it on the cluster's
			// Deleting status), and tried again.
			ctrl.LoggerFrom(ctx).Error(err, "Deleting copy failed; retrying", "object", describe(obj))
			st := v1alpha1.ClusterIntentStatus{ObservedGeneration: ci.Generation, Outcome: v1alpha1.IntentDeleteFailed,
				Message: fmt.Sprintf("delete %s: %v", describe(obj), err), Copy: ci.Status.Copy}
			if _, rerr := r.report(ctx, ci, st); rerr != nil {
				return reconcile.Result{}, rerr
			}
			return reconcile.Result{RequeueAfter: retryAfter}, nil
		}
		if outcome == dispatch.Deleted {
			ctrl.LoggerFrom(ctx).Info("Deleted copy", "object", describe(obj))
		}
	}
	return r.release(ctx, ci, "")
}

// release lets a deleted intent go: its finalizer is removed. why, when
// set, says why its copy was not looked at.
func (r *Reconciler) release(ctx context.Context, ci *v1alpha1.ClusterIntent, why string) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(ci, v1alpha1.FinalizerAgent) {
		return reconcile.Result{}, nil
	}
	if why != "" {
		ctrl.LoggerFrom(ctx).Info("Releasing a deleted intent without touching the member", "intent", ci.Name, "reason", why)
	}
	controllerutil.RemoveFinalizer(ci, v1alpha1.FinalizerAgent)
	if err := r.Hub.Update(ctx, ci); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("release intent %s: %w", ci.Name, err)
	}
	r.forget(ci.Name)
	return reconcile.Result{}, nil
}

// report writes st into the intent's status when it differs; a change of
// the copy alone waits until reportInterval has passed since the last
// report.
func (r *Reconciler) report(ctx context.Context, ci *v1alpha1.ClusterIntent, st v1alpha1.ClusterIntentStatus) (reconcile.Result, error) {
	st.Autoscale = ci.Status.Autoscale // the usage reporter's part
	same, copyOnly := compare(ci.Status, st)
	if same {
		return reconcile.Result{}, nil
	}
	r.mu.Lock()
	last := r.reported[ci.Name]
	r.mu.Unlock()
	if wait := reportInterval - time.Since(last); copyOnly && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	ci.Status = st
	if err := r.Hub.Status().Update(ctx, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("report on intent %s: %w", ci.Name, err)
	}
	r.mu.Lock()
	r.reported[ci.Name] = time.Now()
	r.mu.Unlock()
	return reconcile.Result{}, nil
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	delete(r.reported, name)
	r.mu.Unlock()
}

// compare reports whether two statuses are the same, and whether they
// differ only in the copy.
func compare(old, st v1alpha1.ClusterIntentStatus) (same, copyOnly bool) {
	sameCopy := sameJSON(old.Copy, st.Copy)
	oc, nc := old, st
	oc.Copy, nc.Copy = nil, nil
	rest := equality.Semantic.DeepEqual(oc, nc)
	return rest && sameCopy, rest && !sameCopy
}

// sameJSON compares two embedded objects by their JSON values.
func sameJSON(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, errA := jsonValue(a)
	vb, errB := jsonValue(b)
	return errA == nil && errB == nil && equality.Semantic.DeepEqual(va, vb)
}

func jsonValue(x *runtime.RawExtension) (any, error) {
	raw := x.Raw
	if x.Object != nil {
		var err error
		if raw, err = json.Marshal(x.Object); err != nil {
			return nil, err
		}
	}
	var v any
	err := json.Unmarshal(raw, &v)
	return v, err
}

// reported is what the agent reports of a copy: its projection without
// the resourceVersion, which changes with every write.
func reported(live *unstructured.Unstructured) *runtime.RawExtension {
	out := make(map[string]any, len(live.Object))
	for k, v := range live.Object {
		out[k] = v
	}
	if md, ok := live.Object["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "resourceVersion" {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	if spec, ok := out["spec"].(map[string]any); ok && !onlyCounted(spec) && encodedSize(out) > maxReportedCopy {
		out["spec"] = cutSpec(out, spec)
	}
	return &runtime.RawExtension{Object: &unstructured.Unstructured{Object: out}}
}

// maxReportedCopy bounds a reported copy's encoding: beyond it, its
// spec's largest fields are left out (cutSpec).
const maxReportedCopy = 256 << 10

// cutSpec returns spec without its largest top-level fields, largest
// first, until the copy obj (whose spec it is) encodes within
// maxReportedCopy. A custom kind's projection keeps its whole spec, which
// the intent already holds once: a large one reported again would make
// the intent too large to store, and nothing would ever be reported. What
// the hub reads of a copy's spec (replicas, selector, a rollout's pause
// and budget fields: small values) stays; what is large (a pod template,
// embedded data) goes.
func cutSpec(obj, spec map[string]any) map[string]any {
	sizes := make(map[string]int, len(spec))
	keys := make([]string, 0, len(spec))
	for k, v := range spec {
		b, _ := json.Marshal(v)
		sizes[k] = len(b)
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(sizes[b], sizes[a]), cmp.Compare(a, b)) })
	kept := maps.Clone(spec)
	over := encodedSize(obj) - maxReportedCopy
	for _, k := range keys {
		if over <= 0 {
			break
		}
		if k == "replicas" || k == "selector" {
			continue
		}
		delete(kept, k)
		over -= sizes[k]
	}
	return kept
}

// onlyCounted reports whether spec holds no more than replicas and
// selector (a built-in kind's projection): nothing to cut, and no need to
// encode the copy to find out.
func onlyCounted(spec map[string]any) bool {
	for k := range spec {
		if k != "replicas" && k != "selector" {
			return false
		}
	}
	return true
}

// encodedSize is the length of obj's JSON encoding (0 if it has none).
func encodedSize(obj map[string]any) int {
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return len(b)
}

// decode returns an intent's object and resource.
func decode(ci *v1alpha1.ClusterIntent) (*unstructured.Unstructured, schema.GroupVersionResource, error) {
	gvr := schema.GroupVersionResource{Group: ci.Spec.Resource.Group, Version: ci.Spec.Resource.Version, Resource: ci.Spec.Resource.Resource}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(ci.Spec.Object.Raw); err != nil {
		return nil, gvr, fmt.Errorf("the intent's object cannot be read: %w", err)
	}
	return obj, gvr, nil
}

// matches checks that an intent's object is of the resource the intent
// names (spec.resource, which picks the member cache the copy is read
// from) and has the intent's name. An intent edited by hand, or written
// by a hub of another version, that disagrees would have one object's
// copy judged by another's.
func matches(sess member.Member, ci *v1alpha1.ClusterIntent, obj *unstructured.Unstructured, gvr schema.GroupVersionResource) error {
	if want := pull.IntentName(gvr.GroupResource(), obj.GetNamespace(), obj.GetName()); ci.Name != want {
		return fmt.Errorf("the intent's object %s is not this intent's (its intent would be named %s)", describe(obj), want)
	}
	got, _, err := sess.Resource(obj.GroupVersionKind())
	if err != nil {
		return nil // a kind the member does not serve: Apply says so
	}
	if got.GroupResource() != gvr.GroupResource() {
		return fmt.Errorf("the intent's object %s is of resource %s, not of the intent's resource %s", describe(obj), got.GroupResource(), gvr.GroupResource())
	}
	return nil
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}
