// Package propagate is the controller that makes each member cluster's copy
// of a FederatedObject's template hold what the federation wants: it
// renders the copy (replicas, overrides), applies it with server-side apply
// when something differs, deletes copies from clusters that left the
// placement, and records the outcome per cluster with a Propagated
// condition and events on the template.
package propagate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/recent"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Name is the controller's name for --controllers.
const Name = "propagate"

// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=get;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=overridepolicies;clusteroverridepolicies;propagationpolicies;clusterpropagationpolicies;memberclusters,verbs=get;list;watch

// Reconciler propagates FederatedObjects to their clusters.
type Reconciler struct {
	// Client reads (cached) and writes the host.
	Client client.Client
	// APIReader reads the host without a cache (is a namespace being
	// deleted, when the template cache does not say so yet); default the
	// manager's.
	APIReader client.Reader
	// Templates is the host template cache.
	Templates *templates.Cache
	// Pool holds the member sessions.
	Pool *member.Pool
	// Recorder records events on templates.
	Recorder events.EventRecorder
	// ApplyTimeout bounds one write to one member (default 30 s).
	ApplyTimeout time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles (default 8).
	MaxConcurrentReconciles int
	// WaitBudget is how long a reconcile waits for a member's write before
	// reporting it Pending and moving on (default 2 s).
	WaitBudget time.Duration
	// FederatedRollouts: the rollout controller runs, so a divided
	// Deployment's copies follow its plan (internal/rollout); without it
	// each member rolls on its own.
	FederatedRollouts bool

	queue    trigger.Queue[reconcile.Request]
	flights  flights
	evicting sync.Map // FederatedObject keys keeping an evicted copy for its replacements
	missing  sync.Map // cluster name → when a Ready cluster was first seen without a session
	written  recent.Writes[*v1alpha1.FederatedObject]
	// unknownFate holds the UIDs of FederatedObjects whose CleanupWaiting
	// was recorded (once each), unknownFateKinds the kinds it was logged
	// for (once each).
	unknownFate, unknownFateKinds sync.Map
	// heldNoted: FederatedObject UID → what its CleanupWaiting event for
	// a held namespace last named (noteHeld).
	heldNoted sync.Map
}

// retryAfter is when a cluster whose copy failed is tried again (events
// bring it back sooner when something changes).
const retryAfter = 15 * time.Second

// evictionRecheck bounds the wait of an object keeping an evicted copy
// before it looks at its replacements again.
const evictionRecheck = 30 * time.Second

// conflictRetryAfter is when a cluster whose copy is in Conflict is looked
// at again.
const conflictRetryAfter = 30 * time.Second

// Reconcile propagates one FederatedObject.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, req.NamespacedName, fo); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	fo = r.written.Fresh(fo)
	tmpl, err := r.Templates.GetSynced(ctx, fedobj.Template(fo))
	switch {
	case errors.Is(err, templates.ErrNotSynced):
		return reconcile.Result{RequeueAfter: r.Templates.SyncRetry(fedobj.Template(fo))}, nil
	case errors.Is(err, templates.ErrUnknownKind) && !fo.DeletionTimestamp.IsZero() && fo.Annotations[v1alpha1.AnnotationRelease] != "":
		tmpl = nil // the release mode decides; the template is not needed
	case errors.Is(err, templates.ErrUnknownKind) && !fo.DeletionTimestamp.IsZero():
		// Deleted before federate recorded a release mode, its kind out of
		// the cache (a CRD deleted with its objects): the host decides.
		if tmpl, err = r.unwatchedTemplate(ctx, fo); err != nil {
			r.noteUnknownFate(ctx, fo, err)
			return reconcile.Result{RequeueAfter: templates.RetryAfter(err, 30*time.Second)}, nil
		}
	case err != nil:
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if tmpl != nil && tmpl.GetUID() != fo.Spec.Template.UID {
		tmpl = nil // a new object of the same name: not this FederatedObject's
	}
	if !fo.DeletionTimestamp.IsZero() {
		r.waitingForReplacements(req.NamespacedName, false)
		return r.cleanup(ctx, fo, tmpl)
	}
	if tmpl == nil {
		return reconcile.Result{}, nil // the federate controller deletes fo
	}
	if !fedobj.Scheduled(fo) {
		return reconcile.Result{}, nil // the scheduler's first decision brings it back
	}
	return r.propagate(ctx, fo, tmpl)
}

// propagate is the normal path: it brings every placed cluster's copy up
// to date, evicts the copies of clusters that left (make before break),
// records the outcome and says when to look again.
func (r *Reconciler) propagate(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (reconcile.Result, error) {
	env, err := r.environment(ctx, fo, tmpl)
	if err != nil {
		return reconcile.Result{}, err
	}
	if v1alpha1.Suspended(tmpl.GetAnnotations()) {
		return r.suspend(ctx, fo, tmpl, env, suspended)
	}
	if r.namespaceDeleting(tmpl) {
		return r.suspend(ctx, fo, tmpl, env, namespaceDeleting)
	}
	key := types.NamespacedName{Namespace: fo.Namespace, Name: fo.Name}
	results := r.syncAll(ctx, fo, tmpl, env)
	status := r.status(fo, results)
	r.recordEvents(tmpl, fo.Status.Clusters, results)
	if err := r.writeStatus(ctx, fo, status); err != nil {
		return reconcile.Result{}, err
	}
	waitUntil := time.Time{}
	for _, res := range results {
		if !res.keepUntil.IsZero() && (waitUntil.IsZero() || res.keepUntil.Before(waitUntil)) {
			waitUntil = res.keepUntil
		}
	}
	r.waitingForReplacements(key, !waitUntil.IsZero())
	return nextPass(results, waitUntil), nil
}

// nextPass says when to look at the object again after a pass with
// results: soon while a session or cache is starting, when an evicted
// copy's replacements are due, after retryAfter for failures and
// conflictRetryAfter for conflicts; writes still in flight wake the
// object themselves.
func nextPass(results []result, waitUntil time.Time) reconcile.Result {
	for _, res := range results {
		if res.pending {
			return reconcile.Result{RequeueAfter: time.Second}
		}
	}
	if !waitUntil.IsZero() {
		// Status changes of the replacements wake it sooner.
		return reconcile.Result{RequeueAfter: min(time.Until(waitUntil)+time.Second, evictionRecheck)}
	}
	for _, res := range results {
		switch res.status.Reason {
		case v1alpha1.PropagationApplyFailed, v1alpha1.PropagationDeleting:
			return reconcile.Result{RequeueAfter: retryAfter}
		case v1alpha1.PropagationConflict:
			// Unmanaged member objects are not watched: look again later in
			// case someone removed the conflicting object.
			return reconcile.Result{RequeueAfter: conflictRetryAfter}
		}
	}
	return reconcile.Result{}
}

// writeStatus applies the status fields propagate owns when they differ
// from fo's (fedobj.ApplyStatus: no other controller writes them, so
// there is no race to lose), and remembers the write until the cache
// shows it, so that a pass that runs before then (a member event queued
// during the write) works on what was written.
func (r *Reconciler) writeStatus(ctx context.Context, fo *v1alpha1.FederatedObject, status v1alpha1.FederatedObjectStatus) error {
	replaced := fo.ResourceVersion
	written, err := fedobj.ApplyStatus(ctx, r.Client, fo, fedobj.StatusApply{Manager: v1alpha1.FieldManagerPropagate, Status: status})
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if written {
		r.written.Wrote(replaced, fo)
	}
	return nil
}

// environment is what rendering needs besides the template: the clusters,
// the override policies and the conflict resolution.
type environment struct {
	clusters map[string]*v1alpha1.MemberCluster
	cops     []v1alpha1.ClusterOverridePolicy
	ops      []v1alpha1.OverridePolicy
	adopt    bool
	// conflictHint completes a Conflict message: what would make the copy
	// adopt, or why the template's annotation did not (policy.Adopt).
	conflictHint string
	// graceful is how long a copy that left waits for its replacements
	// (0 for followers: they follow their workloads' copies).
	graceful time.Duration
	// allowEmpty: the object may lose every cluster (the policy's or the
	// object's emptyPlacement is Allow; always for followers, whose
	// placement follows their workloads' copies).
	allowEmpty bool
	// revision is a Deployment's revision (rollout.Revision), "" for
	// other kinds; governed says its rollout is federated
	// (rollout.Governed), by the recorded plan rollout.
	revision string
	governed bool
	rollout  *v1alpha1.RolloutStatus
}

func (r *Reconciler) environment(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured) (*environment, error) {
	env := &environment{clusters: map[string]*v1alpha1.MemberCluster{}}
	mcs := &v1alpha1.MemberClusterList{}
	// Read-only: the cached objects are shared, not copied (their lists of
	// API resources make copies cost more than the rest of the pass).
	if err := r.Client.List(ctx, mcs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range mcs.Items {
		env.clusters[mcs.Items[i].Name] = &mcs.Items[i]
	}
	cops := &v1alpha1.ClusterOverridePolicyList{}
	if err := r.Client.List(ctx, cops); err != nil {
		return nil, err
	}
	env.cops = cops.Items
	if ns := tmpl.GetNamespace(); ns != "" {
		ops := &v1alpha1.OverridePolicyList{}
		if err := r.Client.List(ctx, ops, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		env.ops = ops.Items
	}
	var own *policy.Chosen
	if fo.Spec.Policy != nil {
		spec, err := fedobj.PolicySpec(ctx, r.Client, *fo.Spec.Policy)
		if err != nil {
			return nil, err
		}
		own = &policy.Chosen{Ref: *fo.Spec.Policy, Spec: spec}
		env.graceful = gracefulPeriod(spec)
		if spec != nil {
			env.allowEmpty = scheduler.EmptyPlacement(&spec.Placement, tmpl.GetAnnotations()) == v1alpha1.EmptyPlacementAllow
		}
	} else {
		env.allowEmpty = true
	}
	var leaders []policy.Chosen
	if own == nil && policy.WantsAdopt(tmpl) {
		var err error
		if leaders, err = r.leaderPolicies(ctx, tmpl); err != nil {
			return nil, err
		}
	}
	adoption := policy.Adopt(tmpl, own, leaders)
	env.adopt, env.conflictHint = adoption.Adopt, adoption.Hint
	if rollout.Kind(tmpl) {
		env.revision = rollout.Revision(tmpl)
		env.governed, env.rollout = r.FederatedRollouts && rollout.Governed(tmpl, fedobj.Divided(fo)), fo.Status.Rollout
	}
	return env, nil
}

// result is one cluster's outcome.
type result struct {
	status   v1alpha1.ClusterPropagationStatus
	outcome  string // what was done: Created, Updated, Adopted, Deleted, or ""
	drop     bool   // the copy is gone and the cluster left the placement
	pending  bool   // the cluster's session or cache is starting: try again shortly
	inFlight bool   // a write is still running; it wakes the object when it ends
	// keepUntil: an evicted copy waits for its replacements until then.
	keepUntil time.Time
}

// syncAll brings every placed cluster's copy up to date, all clusters in
// parallel, and then decides about the copies of clusters that left the
// placement (deleted in parallel): make before break, a copy that left is
// weighed against this pass's results of the clusters still placed.
func (r *Reconciler) syncAll(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, env *environment) []result {
	key := types.NamespacedName{Namespace: fo.Namespace, Name: fo.Name}
	prev := map[string]v1alpha1.ClusterPropagationStatus{}
	for _, c := range fo.Status.Clusters {
		prev[c.Cluster] = c
	}
	placed := map[string]bool{}
	var jobs []clusterJob
	for _, p := range fo.Placement() {
		placed[p.Cluster] = true
		jobs = append(jobs, clusterJob{p.Cluster, func() result { return r.syncCluster(ctx, key, tmpl, p, env, prev[p.Cluster]) }})
	}
	results := runAll(key, jobs)
	if left := r.leftClusters(fo, tmpl, placed); len(left) > 0 {
		rep := r.replacements(ctx, fo, tmpl, env, results)
		now := time.Now()
		jobs = jobs[:0]
		for _, c := range left {
			if c.LeftAt == nil {
				c.LeftAt = &metav1.Time{Time: now}
			}
			mc := env.clusters[c.Cluster]
			ev := decideEviction(evictionInput{now: now, leftAt: c.LeftAt.Time, period: env.graceful, rep: rep,
				allowEmpty: env.allowEmpty, forced: mc != nil && scheduler.ForceDrained(mc)})
			if keepsOnMove(tmpl) {
				jobs = append(jobs, clusterJob{c.Cluster, func() result { return retain(mc, c) }})
				continue
			}
			jobs = append(jobs, clusterJob{c.Cluster, func() result { return r.evict(fo, mc, c, ev) }})
		}
		results = append(results, runAll(key, jobs)...)
	}
	slices.SortFunc(results, func(a, b result) int { return strings.Compare(a.status.Cluster, b.status.Cluster) })
	return results
}

// clusterJob is one cluster's part of a pass.
type clusterJob struct {
	cluster string
	run     func() result
}

// runAll runs jobs in parallel and returns their results in order. A job
// that panics becomes that cluster's ApplyFailed result (see guard), so
// one bad object cannot crash the controller-manager from a goroutine
// the reconcile's own panic recovery does not cover.
func runAll(fo types.NamespacedName, jobs []clusterJob) []result {
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Go(func() { results[i] = guard(flightKey{fo: fo, cluster: job.cluster}, job.run) })
	}
	wg.Wait()
	return results
}

// status renders the status fields propagate owns from the results.
func (r *Reconciler) status(fo *v1alpha1.FederatedObject, results []result) v1alpha1.FederatedObjectStatus {
	st := v1alpha1.FederatedObjectStatus{ObservedGeneration: fo.Generation}
	placed := len(fo.Placement())
	var problems, retained []string
	reason, ok := "", 0
	for _, res := range results {
		if res.drop {
			continue
		}
		st.Clusters = append(st.Clusters, res.status)
		if res.status.Reason == v1alpha1.PropagationOK {
			ok++
			continue
		}
		if res.status.Reason == v1alpha1.PropagationRetained {
			retained = append(retained, res.status.Cluster)
			continue
		}
		if reason == "" {
			reason = string(res.status.Reason)
		}
		problems = append(problems, fmt.Sprintf("%s: %s: %s", res.status.Cluster, res.status.Reason, res.status.Message))
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionPropagated, ObservedGeneration: fo.Generation}
	switch {
	case placed == 0 && len(problems) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NoClusters", "the placement is empty"
	case len(problems) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Propagated", fmt.Sprintf("%d/%d clusters up to date", ok, placed)
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, reason
		cond.Message = fmt.Sprintf("%d/%d clusters up to date; %s", ok, placed, strings.Join(problems, "; "))
	}
	if len(retained) > 0 {
		cond.Message += fmt.Sprintf("; copies kept in %s, which left the placement (%s)", strings.Join(retained, ", "), v1alpha1.AnnotationKeepOnMove)
	}
	if len(cond.Message) > 32768 {
		cond.Message = cond.Message[:32768]
	}
	st.Conditions = []metav1.Condition{fedobj.Condition(fo.Status, cond)}
	return st
}
