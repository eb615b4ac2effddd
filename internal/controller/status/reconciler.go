// Package status is the controller that brings the member copies' status
// back into the host: it aggregates them with multi-cluster meaning
// (package workload) into the template's own .status, so that kubectl get
// and kubectl rollout status on the host tell the truth across clusters.
package status

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "status"

// Permissions: patch the status of the kinds whose host status is
// aggregated (workload.Aggregated).
//
// +kubebuilder:rbac:groups=apps,resources=deployments/status;statefulsets/status;daemonsets/status;replicasets/status,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs/status;cronjobs/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=patch

// Reconciler aggregates member status into templates.
type Reconciler struct {
	// Client reads FederatedObjects (cached).
	Client client.Client
	// Dynamic writes the templates' status.
	Dynamic dynamic.Interface
	// Templates is the host template cache.
	Templates *templates.Cache
	// Pool holds the member sessions.
	Pool *member.Pool
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int
	// Recorder records events on the templates (a status rule of the
	// kind's WorkloadInterpreter that fails on one).
	Recorder events.EventRecorder

	queue trigger.Queue[reconcile.Request]
	// noSession: cluster name → when a usable cluster was first seen
	// without a session (one that never starts is not waited for each
	// second).
	noSession sync.Map
	// ruleErrors: FederatedObject → the status rule that last failed on
	// its template (ruleFailure), so that the event is recorded once per
	// new failure rather than on every pass.
	ruleErrors sync.Map
	// refusals: FederatedObject → when the host last refused its
	// template's aggregated status (ruleFailure), apart from ruleErrors so
	// that neither report resets the other's period.
	refusals sync.Map
	// stalls: FederatedObject → how many passes in a row found a copy it
	// needs in a stalled member cache (stalledDelay): a member that stays
	// stalled is looked at less and less often, not every few seconds
	// for every object placed on it.
	stalls sync.Map
	// now is the clock of reportRule (time.Now when nil).
	now func() time.Time
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	r.Pool.Subscribe(func(e member.ObjectEvent) {
		if req, ok := fedobj.MemberEventRequest(r.Templates, e); ok {
			// A member copy's change is what the host status waits for:
			// ahead of the FederatedObject and template events that a
			// burst of new objects queues by the thousand.
			r.queue.AddUrgent(req)
		}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.FederatedObject{}).
		// A cluster turning unready (or Ready) changes what counts.
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			reqs, err := fedobj.ForCluster(ctx, r.Client, o.GetName())
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects of cluster", "cluster", o.GetName())
			}
			return reqs
		}), builder.WithPredicates(fedobj.ReadinessOrLabelsChanged)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// Reconcile aggregates one FederatedObject's member status into its
// template.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	// Read-only: the cached object is shared, not copied (this
	// controller writes the template's status, never fo).
	if err := r.Client.Get(ctx, req.NamespacedName, fo, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.ruleErrors.Delete(req.NamespacedName)
			r.refusals.Delete(req.NamespacedName)
			r.stalls.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fo.DeletionTimestamp.IsZero() || !fedobj.Scheduled(fo) {
		// Before the first decision there is nothing to report yet.
		return reconcile.Result{}, nil
	}
	tmpl, err := r.Templates.GetSynced(ctx, fedobj.Template(fo))
	if errors.Is(err, templates.ErrNotSynced) {
		return reconcile.Result{RequeueAfter: r.Templates.SyncRetry(fedobj.Template(fo))}, nil
	}
	if errors.Is(err, templates.ErrUnknownKind) {
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil // a kind removed, or not discovered yet
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read the template of %s: %w", req, err)
	}
	if tmpl == nil || tmpl.GetUID() != fo.Spec.Template.UID || !tmpl.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	if !workload.Aggregated(tmpl) {
		return reconcile.Result{}, nil
	}
	if c := unrecorded(fo); c != "" {
		// The propagate controller has not recorded its first pass over
		// this cluster: its copy is being created. Writing now would report
		// it missing, and be written again a moment later; propagate's
		// status write brings the object back.
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for the first propagation to a cluster", "cluster", c)
		return reconcile.Result{}, nil
	}
	members, unknown, err := r.members(ctx, fo, tmpl)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch unknown {
	case copyStarting:
		// A Ready member's copy is not known yet (a restart): writing now
		// would report it missing and flip conditions for a second.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case copyNoSession, copyStalled:
		// A Ready member whose session has not started for
		// member.StallAfter (no cluster controller runs), or whose cache
		// has listed for longer than that (a slow member, or a large one
		// after a restart): its copy is unknown, not absent. Reporting it
		// missing would write the host twice (missing, then back) with
		// nothing changed in the member. Looked at again less and less
		// often; the cache's first list wakes every copy it finds.
		n, _ := r.stalls.Load(req.NamespacedName)
		passes, _ := n.(int)
		r.stalls.Store(req.NamespacedName, passes+1)
		return reconcile.Result{RequeueAfter: stalledDelay(passes)}, nil
	}
	r.stalls.Delete(req.NamespacedName)
	status, changed, ruleErr := workload.AggregateStatusOf(tmpl, members, metav1.Now())
	var result reconcile.Result
	if ruleErr != nil {
		// Looked at again to report a rule that keeps failing.
		result.RequeueAfter = ruleReportEvery
		r.reportRule(ctx, req.NamespacedName, tmpl, ruleErr)
	}
	if !changed {
		return result, nil
	}
	if err := r.writeStatus(ctx, tmpl, status); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		if apierrors.IsInvalid(err) {
			r.reportRefused(ctx, req.NamespacedName, tmpl, err)
		}
		return reconcile.Result{}, err
	}
	return result, nil
}

// reportRefused records a Warning event StatusRefused on tmpl when the
// host refuses its aggregated status (a value that does not fit the
// kind's schema, such as a WorkloadInterpreter status rule yielding the
// wrong type): no field of the host's status is updated until it is
// fixed, which the log alone would not tell the user. At most once per
// ruleReportEvery per object.
func (r *Reconciler) reportRefused(ctx context.Context, key types.NamespacedName, tmpl *unstructured.Unstructured, err error) {
	const rule = "status patch refused"
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if prev, ok := r.refusals.Load(key); ok {
		if p := prev.(ruleFailure); p.uid == tmpl.GetUID() && now.Sub(p.reported) < ruleReportEvery {
			return
		}
	}
	r.refusals.Store(key, ruleFailure{uid: tmpl.GetUID(), rule: rule, reported: now})
	ctrl.LoggerFrom(ctx).Info("The host refused the aggregated status", "kind", tmpl.GetKind(), "object", klog.KObj(tmpl), "error", err.Error())
	if r.Recorder == nil {
		return
	}
	note := fmt.Sprintf("The host refused the status aggregated from the members, so none of this object's status fields is updated (check the status rules of the %s WorkloadInterpreter, if any): %v", tmpl.GetKind(), err)
	if len(note) > maxNote {
		note = truncate(note, maxNote-3) + "..."
	}
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, "StatusRefused", "AggregateStatus", "%s", note)
}

// ruleFailure is a status rule that failed on a template, and when it was
// last reported.
type ruleFailure struct {
	uid      types.UID
	rule     string
	reported time.Time
}

// ruleReportEvery is how often a status rule that keeps failing on an
// object is reported again (events expire after an hour by default).
const ruleReportEvery = 30 * time.Minute

// maxNote is the longest event note the events API accepts.
const maxNote = 1024

// reportRule records a Warning event StatusRuleFailed on tmpl when a
// status rule of its kind's WorkloadInterpreter failed on it: once per
// rule that starts failing, and again every ruleReportEvery while it
// does. The field the rule fills keeps its value meanwhile, and the event
// says why it does not follow the members. A rule that fails on and off,
// or with a message that quotes a changing value, is not reported again
// each time.
func (r *Reconciler) reportRule(ctx context.Context, key types.NamespacedName, tmpl *unstructured.Unstructured, ruleErr error) {
	if ruleErr == nil {
		return
	}
	msg := ruleErr.Error()
	rule := ruleOf(msg)
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if prev, ok := r.ruleErrors.Load(key); ok {
		if p := prev.(ruleFailure); p.uid == tmpl.GetUID() && p.rule == rule && now.Sub(p.reported) < ruleReportEvery {
			return
		}
	}
	r.ruleErrors.Store(key, ruleFailure{uid: tmpl.GetUID(), rule: rule, reported: now})
	ctrl.LoggerFrom(ctx).Info("A status rule failed", "kind", tmpl.GetKind(), "object", klog.KObj(tmpl), "error", msg)
	if r.Recorder == nil {
		return
	}
	note := fmt.Sprintf("A status rule of the %s WorkloadInterpreter failed; its field keeps its last value: %s", tmpl.GetKind(), msg)
	if len(note) > maxNote {
		note = truncate(note, maxNote-3) + "..."
	}
	// The rule is part of the action: events of one reason and action
	// on one object are merged into a series that keeps the first note.
	r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, "StatusRuleFailed", truncate("AggregateStatus "+rule, 128), "%s", note)
}

// ruleOf is the rule an interpreter's error names: the text before its
// first ": " (a field path, or the expression's place in the spec).
func ruleOf(msg string) string {
	rule, _, _ := strings.Cut(msg, ": ")
	return rule
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// unrecorded returns a placed cluster that fo's status.clusters does not
// list yet, or "".
func unrecorded(fo *v1alpha1.FederatedObject) string {
	for _, p := range fo.Placement() {
		if !slices.ContainsFunc(fo.Status.Clusters, func(c v1alpha1.ClusterPropagationStatus) bool { return c.Cluster == p.Cluster }) {
			return p.Cluster
		}
	}
	return ""
}

// unknownCopy says why a usable cluster's copy is not known.
type unknownCopy int

const (
	// copiesKnown: every usable cluster's copy is known.
	copiesKnown unknownCopy = iota
	// copyStarting: a session or its cache of the kind is starting.
	copyStarting
	// copyStalled: a cache has been listing for longer than
	// member.StallAfter.
	copyStalled
	// copyNoSession: a usable cluster has had no session for longer than
	// member.StallAfter.
	copyNoSession
)

// stalledRetry and stalledRetryMax bound how long an object waits before
// it is looked at again while a member cache it needs is stalled.
const (
	stalledRetry    = 5 * time.Second
	stalledRetryMax = 2 * time.Minute
)

// stalledDelay is the wait after the given number of earlier passes in a
// row that found a stalled member cache: stalledRetry, doubling up to
// stalledRetryMax.
func stalledDelay(passes int) time.Duration {
	if passes >= 5 { // 5 s × 2^5 is past the cap
		return stalledRetryMax
	}
	return min(stalledRetry<<passes, stalledRetryMax)
}

// members collects the placed clusters' copies from the member caches. A
// cluster that is not usable (copies.Usable: gone, being deleted, not
// Ready) counts as holding no copy. unknown says when a usable cluster's
// copy is not known (its session or cache is starting or stalled): the
// host status is then a function of what the members hold only once
// every copy is known. The caches are looked up by the host's resource of
// the kind, without touching the member, so a slow member never holds a
// worker here.
func (r *Reconciler) members(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (out []workload.Member, unknown unknownCopy, err error) {
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return nil, copiesKnown, nil
	}
	synced := map[string]v1alpha1.ClusterPropagationStatus{}
	for _, c := range fo.Status.Clusters {
		synced[c.Cluster] = c
	}
	for _, p := range fo.Placement() {
		m := workload.Member{Cluster: p.Cluster}
		st := synced[p.Cluster]
		m.Current = st.Reason == v1alpha1.PropagationOK && st.TemplateGeneration == tmpl.GetGeneration()
		mc := &v1alpha1.MemberCluster{}
		// Read-only: the cached object is shared, not copied (its list of API
		// resources makes a copy cost more than the rest of the pass).
		if err := r.Client.Get(ctx, client.ObjectKey{Name: p.Cluster}, mc, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
			return nil, copiesKnown, err
		}
		if mc.Name == "" {
			mc = nil // not found
		}
		c := copies.Of(ctx, r.Pool, mc, p.Cluster, kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
		if c.Session != nil {
			r.noSession.Delete(p.Cluster)
		}
		switch {
		case c.Starting():
			first, _ := r.noSession.LoadOrStore(p.Cluster, time.Now())
			if time.Since(first.(time.Time)) > member.StallAfter {
				return nil, copyNoSession, nil
			}
			return nil, copyStarting, nil
		case c.Waiting():
			return nil, copyStarting, nil
		case c.Session != nil && !c.Known():
			return nil, copyStalled, nil
		}
		m.Object = c.Live // nil when absent, or when the cluster is not usable (it holds no copy)
		out = append(out, m)
	}
	return out, copiesKnown, nil
}

// writeStatus patches the template's status subresource with the
// difference to status, guarded by the template's resourceVersion.
func (r *Reconciler) writeStatus(ctx context.Context, tmpl *unstructured.Unstructured, status map[string]any) error {
	key := templates.KeyOf(tmpl)
	kind, ok := r.Templates.Lookup(key.GroupKind())
	if !ok {
		return fmt.Errorf("%s: %w", key, templates.ErrUnknownKind)
	}
	before, err := json.Marshal(map[string]any{"status": tmpl.Object["status"]})
	if err != nil {
		return err
	}
	after, err := json.Marshal(map[string]any{"status": status, "metadata": map[string]any{"resourceVersion": tmpl.GetResourceVersion()}})
	if err != nil {
		return err
	}
	patch, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return fmt.Errorf("status patch for %s: %w", key, err)
	}
	res := r.Dynamic.Resource(kind.GVR)
	var ri dynamic.ResourceInterface = res
	if kind.Namespaced {
		ri = res.Namespace(tmpl.GetNamespace())
	}
	if _, err := ri.Patch(ctx, tmpl.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "flotilla"}, "status"); err != nil {
		return fmt.Errorf("update status of %s: %w", key, err)
	}
	return nil
}
