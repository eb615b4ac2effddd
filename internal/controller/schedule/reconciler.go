// Package schedule is the controller that decides each FederatedObject's
// placement: it calls the scheduler for objects a policy propagates, and
// places followers on the union of the clusters of the workloads that
// reference them. It writes the placement (status.scheduledClusters), the
// Scheduled condition and the basis of the decision together, in one
// server-side apply of the fields it owns.
package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/ratelimit"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Name is the controller's name for --controllers.
const Name = "schedule"

// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=get;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters;schedulerpluginwebhooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=schedulingprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=schedulingprofiles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=get;list;watch

// Reconciler places FederatedObjects.
type Reconciler struct {
	// Client reads (cached) and writes the host.
	Client client.Client
	// Templates is the host template cache.
	Templates *templates.Cache
	// Recorder records events on FederatedObjects.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int
	// CredentialsNamespace holds the webhooks' client certificate Secrets.
	CredentialsNamespace string
	// EvictionObjectsPerMinute is how many objects may leave one member
	// cluster a minute because it is tainted NoExecute for not being Ready
	// (0 or less: no limit; see brakes.go).
	EvictionObjectsPerMinute float64
	// Estimator, when set, gives decisions their members' simulated room
	// and records them in the ledger (simulated scheduling).
	Estimator *estimate.Estimator

	queue         trigger.Queue[reconcile.Request]
	profiles      profileCache
	evictions     *ratelimit.Keyed // per evicted cluster; nil: no limit
	evictionBurst int
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.EvictionObjectsPerMinute > 0 {
		r.evictionBurst = ratelimit.BurstFor(r.EvictionObjectsPerMinute)
		r.evictions = ratelimit.NewKeyed(r.EvictionObjectsPerMinute, r.evictionBurst)
	}
	// A template's replicas (or anything else) changed.
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.FederatedObject{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, limitsChanged))).
		// A leader's placement, and the clusters still holding its copies,
		// move its followers.
		Watches(&v1alpha1.FederatedObject{}, handler.EnqueueRequestsFromMapFunc(followersOf), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, fedobj.PlacementChanged, copiesChanged))).
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(fedobj.OfPolicy(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterPropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(fedobj.OfPolicy(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(clusterChanged)).
		Watches(&v1alpha1.SchedulingProfile{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.SchedulerPluginWebhook{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// conflictRetry is when a decision whose write met a newer object is made
// again (the cache has it by then).
const conflictRetry = 250 * time.Millisecond

// Reconcile places one FederatedObject.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.decide(ctx, req)
	if apierrors.IsConflict(err) {
		// Decided from a cached copy older than the object (record's
		// write is conditional): decide again from the newer one.
		ctrl.LoggerFrom(ctx).V(1).Info("Object changed since it was read; deciding again", "reason", err.Error())
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

// decide is Reconcile's work.
func (r *Reconciler) decide(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, req.NamespacedName, fo); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.String())
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fo.DeletionTimestamp.IsZero() {
		r.forget(req.String())
		return reconcile.Result{}, nil
	}
	if fo.Spec.Policy == nil {
		placement, err := r.followerPlacement(ctx, fo)
		if err != nil {
			return reconcile.Result{}, err
		}
		reason := "Scheduled"
		if len(placement) == 0 {
			reason = "NoClusters"
		}
		_, err = r.record(ctx, fo, placement, scheduledCondition(fo, len(placement) > 0, reason, fmt.Sprintf("follows its workloads to %d clusters", len(placement))), "", "")
		return reconcile.Result{}, err
	}
	spec, err := fedobj.PolicySpec(ctx, r.Client, *fo.Spec.Policy)
	if err != nil || spec == nil {
		return reconcile.Result{}, err // a missing policy: the federate controller releases the object
	}
	tmpl, err := r.Templates.GetSynced(ctx, fedobj.Template(fo))
	if errors.Is(err, templates.ErrNotSynced) {
		return reconcile.Result{RequeueAfter: r.Templates.SyncRetry(fedobj.Template(fo))}, nil
	}
	if errors.Is(err, templates.ErrUnknownKind) {
		// A kind removed from the host, or not discovered yet: its
		// informer's first events bring the object back too.
		ctrl.LoggerFrom(ctx).V(1).Info("Template kind not served; looking again later", "reason", err.Error())
		return reconcile.Result{RequeueAfter: unknownKindRetry}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read the template of %s: %w", req, err)
	}
	if tmpl == nil {
		return reconcile.Result{}, nil // the federate controller deals with it
	}
	profile, version, err := r.profile(ctx, spec.Placement.SchedulingProfile)
	if err != nil {
		// Fixed by a profile or webhook change, whose events come back here,
		// or by a Secret appearing: look again in a while too.
		if _, err := r.record(ctx, fo, fo.Placement(), scheduledCondition(fo, false, "ProfileInvalid", err.Error()), fo.Status.SchedulingBasis, ""); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	u := scheduler.NewUnit(fo, tmpl, &spec.Placement)
	candidates, err := r.candidates(ctx, u)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := time.Now()
	next := reconcile.Result{}
	if at := scheduler.NextExpiry(u, candidates, now); !at.IsZero() {
		next.RequeueAfter = at.Sub(now) + time.Second
	}
	r.restore(u)
	basis := scheduler.Basis(u, candidates, version, now)
	last := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
	if basis == fo.Status.SchedulingBasis && last != nil && last.Reason == "Scheduled" && len(fo.Spec.Placement) == 0 &&
		ordinalsInForce(u, tmpl, fo.Placement(), clusterSet(candidates)) {
		return next, nil // nothing the last decision depended on changed
	}
	sim := r.begin(u, profile.Remote())
	defer sim.release()
	sim.fill(candidates)
	res, err := profile.Schedule(ctx, u, candidates)
	if err == nil && res.Feasible == 0 && u.Placement.Sticky && len(u.Current) > 0 {
		// None of a sticky object's clusters can hold it any more: place it
		// afresh among all clusters.
		u.Current = nil
		if candidates, err = r.candidates(ctx, u); err != nil {
			return reconcile.Result{}, err
		}
		u.Current = fo.Placement()
		sim.fill(candidates)
		res, err = profile.Schedule(ctx, u, candidates)
	}
	if err != nil {
		// A failing plugin (a webhook): keep the placement in force, say why,
		// and try again on a back-off (no basis recorded).
		sim.release()
		if _, serr := r.record(ctx, fo, fo.Placement(), scheduledCondition(fo, false, "SchedulerError", err.Error()), fo.Status.SchedulingBasis, ""); serr != nil {
			return reconcile.Result{}, serr
		}
		return reconcile.Result{}, fmt.Errorf("schedule %s: %w", req, err)
	}
	reason, message, placement := "Scheduled", res.Message, fo.Placement()
	if why := estimate.Explain(u); why != "" {
		message += "; " + why
	}
	exists := clusterSet(candidates)
	stays := func(c string) bool { return exists(c) && res.Excluded[c] == "" }
	var drops []string
	switch {
	case len(res.Placement) > 0:
		res.Placement = withOrdinals(u, tmpl, placement, res.Placement, exists, stays)
		drops = failoverDrops(placement, res.Placement, candidates)
		ok, msg, wait := r.admitEviction(drops, now)
		if !ok {
			// Keep the placement in force and the basis unrecorded: the
			// decision is made again when a token is due.
			sim.release()
			if _, err := r.record(ctx, fo, placement, scheduledCondition(fo, false, reasonEvictionRateLimited, msg), fo.Status.SchedulingBasis, ""); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		placement = res.Placement
	case res.Feasible == 0:
		// No cluster passes the filters: keep the placement in force unless
		// the object may lose every cluster.
		reason = v1alpha1.ReasonUnschedulable
		var note string
		_, divided := scheduler.DividedJob(u, tmpl)
		placement, note = noFit(placement, candidates, u.Placement.EmptyPlacement, divided)
		if note != "" {
			message += "; " + note
		}
	default:
		// Clusters pass the filters but no choice or replica plan satisfies
		// the policy (spread, a webhook): keep the placement in force
		// rather than remove the object everywhere.
		reason = v1alpha1.ReasonUnschedulable
	}
	placement = withOrdinals(u, tmpl, fo.Placement(), placement, exists, stays)
	undo := sim.reserve(placement)
	written, err := r.record(ctx, fo, placement, scheduledCondition(fo, reason == "Scheduled", reason, message), basis, message)
	if !written && err != nil {
		if !applied.Maybe(err) {
			// Refused: nothing moved; the decision is made again. A
			// write that may have been stored (a timeout) keeps its
			// eviction tokens, as the brake errs on the slow side, and
			// its reservations and records, which a stored placement
			// needs (its basis then holds: no decision follows).
			r.evictions.ReturnAll(drops)
			undo()
		}
		return reconcile.Result{}, err
	}
	evicted(drops)
	if err != nil {
		return reconcile.Result{}, err // the decision is written; what failed after is retried
	}
	if reason == v1alpha1.ReasonUnschedulable && (next.RequeueAfter == 0 || next.RequeueAfter > unschedulableRetry) {
		// Free capacity is not part of the basis: look again later.
		next.RequeueAfter = unschedulableRetry
	}
	return next, nil
}

// candidates are the clusters a decision considers: all of them, or for a
// sticky object already placed, the clusters it is on.
func (r *Reconciler) candidates(ctx context.Context, u *framework.Unit) ([]*v1alpha1.MemberCluster, error) {
	list := &v1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.MemberCluster, 0, len(list.Items))
	for i := range list.Items {
		c := &list.Items[i]
		if u.Placement.Sticky && len(u.Current) > 0 {
			if _, placed := u.CurrentReplicas(c.Name); !placed {
				continue
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// scheduledCondition is the Scheduled condition for an outcome.
func scheduledCondition(fo *v1alpha1.FederatedObject, ok bool, reason, message string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: fo.Generation}
	if !ok {
		c.Status = metav1.ConditionFalse
	}
	if len(c.Message) > 32768 {
		c.Message = c.Message[:32768]
	}
	return c
}

// record writes the decision: the placement, the Scheduled condition, the
// basis and the placement's summary, in one server-side apply of the
// fields the scheduler owns (nothing when they are unchanged). An event
// says why a placement moved (the first decision records none: the
// object's Propagated condition and copies tell it), and a Warning why an
// object is not scheduled. An object an earlier version wrote keeps its
// decision in spec.placement; once status holds it, spec.placement is
// cleared.
func (r *Reconciler) record(ctx context.Context, fo *v1alpha1.FederatedObject, placement []v1alpha1.ClusterPlacement, cond metav1.Condition, basis, why string) (written bool, err error) {
	if len(placement) == 0 {
		placement = nil
	}
	// Copies: the write decodes the answer into fo, over the same
	// slices and pointers.
	before := clonePlacement(fo.Placement())
	var old *metav1.Condition
	if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled); c != nil {
		old = c.DeepCopy()
	}
	// Conditional: a decision made from a cached copy older than the
	// object (a seed, or this controller's own last write, not seen yet)
	// fails with a conflict and is made again, instead of overwriting
	// what it did not see.
	written, err = fedobj.ApplyStatus(ctx, r.Client, fo, fedobj.StatusApply{Manager: v1alpha1.FieldManagerSchedule, ResourceVersion: fo.ResourceVersion, Status: v1alpha1.FederatedObjectStatus{
		Conditions:        []metav1.Condition{fedobj.Condition(fo.Status, cond)},
		ScheduledClusters: placement,
		Placement:         summary(placement),
		SchedulingBasis:   basis,
	}})
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if written && r.Recorder != nil {
		r.tell(ctx, fo, placement, before, old, cond, why)
	}
	if len(fo.Spec.Placement) > 0 {
		// Written by an earlier version: status holds the decision now.
		if err := r.Client.Patch(ctx, fo, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"placement":null}}`))); client.IgnoreNotFound(err) != nil {
			return written, fmt.Errorf("clear the deprecated spec.placement of %s/%s: %w", fo.Namespace, fo.Name, err)
		}
	}
	return written, nil
}

// tell records the events of a decision written: a move, and a Warning
// why an object is not scheduled.
func (r *Reconciler) tell(ctx context.Context, fo *v1alpha1.FederatedObject, placement, before []v1alpha1.ClusterPlacement, old *metav1.Condition, cond metav1.Condition, why string) {
	if moved := !equality.Semantic.DeepEqual(placement, before) && !(len(placement) == 0 && len(before) == 0); moved {
		ctrl.LoggerFrom(ctx).Info("Placed", "placement", describe(placement), "before", describe(before))
		if old != nil {
			msg := fmt.Sprintf("%s (was %s)", describe(placement), describe(before))
			if why != "" {
				msg += ": " + why
			}
			r.Recorder.Eventf(fo, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "%s", msg)
		}
	}
	if cond.Status == metav1.ConditionFalse && (old == nil || old.Reason != cond.Reason || !sameCause(cond.Reason, old.Message, cond.Message)) {
		r.Recorder.Eventf(fo, nil, corev1.EventTypeWarning, cond.Reason, "Schedule", "%s", cond.Message)
	}
}

// clonePlacement is a deep copy of p.
func clonePlacement(p []v1alpha1.ClusterPlacement) []v1alpha1.ClusterPlacement {
	if p == nil {
		return nil
	}
	out := make([]v1alpha1.ClusterPlacement, len(p))
	for i := range p {
		p[i].DeepCopyInto(&out[i])
	}
	return out
}

// unknownKindRetry is how often an object whose template kind the host
// does not serve is looked at again.
const unknownKindRetry = 30 * time.Second

// unschedulableRetry is how often an Unschedulable object is decided again
// while nothing in its basis changes (capacity may have freed up).
const unschedulableRetry = time.Minute

// followerPlacement is the union of the clusters of the workloads that
// reference a follower, of the clusters still holding their copies, and
// of the clusters where workloads released with their copies kept run
// (fedobj.KeptForOrphans) while they are members.
func (r *Reconciler) followerPlacement(ctx context.Context, fo *v1alpha1.FederatedObject) ([]v1alpha1.ClusterPlacement, error) {
	leaders := &v1alpha1.FederatedObjectList{}
	key := fedobj.FollowerKey(fo.Spec.Template.Kind, fo.Spec.Template.Name)
	if err := r.Client.List(ctx, leaders, client.InNamespace(fo.Namespace), client.MatchingFields{fedobj.IndexFollower: key}); err != nil {
		return nil, err
	}
	var names []string
	live := 0
	for _, l := range leaders.Items {
		if !l.DeletionTimestamp.IsZero() {
			continue
		}
		live++
		for _, p := range l.Placement() {
			names = append(names, p.Cluster)
		}
		for _, c := range l.Status.Clusters {
			names = append(names, c.Cluster) // an evicted copy still running needs its followers
		}
	}
	if live == 0 {
		// No workload references it any more: the federate controller
		// releases it and its copies stay where they are.
		return fo.Placement(), nil
	}
	for _, c := range fedobj.KeptForOrphans(fo) {
		err := r.Client.Get(ctx, client.ObjectKey{Name: c}, &v1alpha1.MemberCluster{})
		switch {
		case err == nil:
			names = append(names, c)
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]v1alpha1.ClusterPlacement, 0, len(names))
	for _, n := range names {
		out = append(out, v1alpha1.ClusterPlacement{Cluster: n})
	}
	return out, nil
}

// summary is the placement as "member-1=3,member-2=3" (names alone for
// objects without replicas), for kubectl get fo.
func summary(placement []v1alpha1.ClusterPlacement) string {
	parts := make([]string, 0, len(placement))
	for _, p := range placement {
		switch {
		case p.Replicas != nil && p.OrdinalStart != nil && *p.Replicas > 0:
			// A range of ordinals (StatefulSet) or indexes (Indexed Job).
			parts = append(parts, fmt.Sprintf("%s=%d[%d..%d]", p.Cluster, *p.Replicas, *p.OrdinalStart, *p.OrdinalStart+*p.Replicas-1))
		case p.Replicas != nil:
			parts = append(parts, fmt.Sprintf("%s=%d", p.Cluster, *p.Replicas))
		default:
			parts = append(parts, p.Cluster)
		}
	}
	return strings.Join(parts, ",")
}

func describe(placement []v1alpha1.ClusterPlacement) string {
	if len(placement) == 0 {
		return "no clusters"
	}
	return strings.ReplaceAll(summary(placement), ",", ", ")
}
