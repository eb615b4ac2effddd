// Package rollout is the controller that drives federated rolling
// updates. For a Deployment divided over clusters it records in the
// FederatedObject's status which clusters may roll now and with what
// share of the host object's maxSurge and maxUnavailable (planned by
// internal/rollout from what the member copies report), and the RolledOut
// condition. The propagate controller renders each copy from that record:
// held (paused) until admitted, then with its share.
package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/recent"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "rollout"

// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects;memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=get;patch

// DefaultStallAfter is how long a rolling cluster may be unusable before
// its share of the budget goes back to the others.
const DefaultStallAfter = 5 * time.Minute

// Reconciler plans the federated rollouts.
type Reconciler struct {
	// Client reads FederatedObjects and MemberClusters (cached) and
	// writes the rollout status.
	Client client.Client
	// Templates is the host template cache.
	Templates *templates.Cache
	// Pool holds the member sessions.
	Pool *member.Pool
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int
	// StallAfter overrides DefaultStallAfter.
	StallAfter time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time

	queue   trigger.Queue[ctrl.Request]
	written recent.Writes[*v1alpha1.FederatedObject]
}

// SetupWithManager registers the controller with mgr: FederatedObjects,
// their templates, their member copies (status included: a copy's
// progress is what admits the next cluster) and the clusters' readiness.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	r.Pool.Subscribe(func(e member.ObjectEvent) {
		if req, ok := fedobj.MemberEventRequest(r.Templates, e); ok {
			r.queue.Add(req)
		}
	})
	// Forget the status writes the cache has caught up with.
	inf, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha1.FederatedObject{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) {
			if fo, ok := o.(*v1alpha1.FederatedObject); ok {
				r.written.Observed(fo, false)
			}
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if fo, ok := o.(*v1alpha1.FederatedObject); ok {
				r.written.Observed(fo, true)
			}
		},
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.FederatedObject{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, fedobj.PlacementChanged))).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(fedobj.OnCluster(r.Client)), builder.WithPredicates(fedobj.ReadinessOrLabelsChanged)).
		// A policy's stages.
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterPropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// inNamespace maps a policy to the FederatedObjects of its namespace
// (all of them for a cluster-scoped policy).
func (r *Reconciler) inNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	reqs, err := fedobj.All(ctx, r.Client, o.GetNamespace())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects")
	}
	return reqs
}

// Reconcile plans one FederatedObject's rollout.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, req.NamespacedName, fo); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The plan just written, until the cache shows it: planning from an
	// older one could re-hold a cluster just admitted.
	fo = r.written.Fresh(fo)
	if !fo.DeletionTimestamp.IsZero() || !fedobj.Scheduled(fo) {
		return reconcile.Result{}, nil
	}
	tmpl, err := r.Templates.GetSynced(ctx, fedobj.Template(fo))
	switch {
	case errors.Is(err, templates.ErrNotSynced):
		return reconcile.Result{RequeueAfter: r.Templates.SyncRetry(fedobj.Template(fo))}, nil
	case errors.Is(err, templates.ErrUnknownKind):
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("read the template of %s: %w", req, err)
	case tmpl == nil || tmpl.GetUID() != fo.Spec.Template.UID:
		return reconcile.Result{}, nil
	}
	if !rollout.Governed(tmpl, fedobj.Divided(fo)) {
		// Nothing of ours to keep (a policy turned Duplicate, the
		// per-member annotation): give the fields up.
		return reconcile.Result{}, r.write(ctx, fo, nil, nil)
	}
	now := r.now()
	total, _ := workload.Replicas(tmpl)
	budget, err := rollout.Resolve(tmpl, total)
	if err != nil {
		where := "spec.strategy.rollingUpdate"
		switch {
		case rollout.StatefulSet(tmpl):
			where = "spec.updateStrategy.rollingUpdate"
		case workload.RolloutInterpreter(tmpl) != nil:
			where = "the rollout budget fields (its WorkloadInterpreter's rollout rule)"
		}
		cond := metav1.Condition{Type: v1alpha1.ConditionRolledOut, Status: metav1.ConditionFalse, Reason: "InvalidStrategy",
			Message: where + ": " + err.Error()}
		return reconcile.Result{}, r.write(ctx, fo, fo.Status.Rollout, &cond)
	}
	revision := rollout.Revision(tmpl)
	// The history serves kubectl rollout history/undo of a Deployment
	// (a StatefulSet's would be ControllerRevisions, which the host does
	// not keep; custom kinds have their own); the rollout itself goes on
	// without it.
	if gvk := tmpl.GroupVersionKind(); gvk.Group == "apps" && gvk.Kind == "Deployment" {
		if err := r.recordRevision(ctx, tmpl, revision); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Recording the revision history")
		}
	}
	members, clusterLabels, wait, err := r.members(ctx, fo, tmpl, now)
	if err != nil || wait {
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	stages, stagesErr := r.stages(ctx, fo, members, clusterLabels)
	var invalid invalidStages
	if stagesErr != nil && !errors.As(stagesErr, &invalid) {
		return reconcile.Result{}, stagesErr
	}
	in := rollout.Input{Revision: revision, Budget: budget, Previous: fo.Status.Rollout, Members: members,
		Frozen: rollout.Paused(tmpl) || stagesErr != nil, Suspended: v1alpha1.Suspended(tmpl.GetAnnotations()), Now: now, StallAfter: r.stallAfter(), Stages: stages}
	in.Approved, in.Resumed = approvals(tmpl, revision, stages)
	plan := rollout.Plan(in)
	cond := condition(plan, in.Frozen, members)
	next := nextLook(r.stallCheck(plan, members, now), plan, now)
	switch {
	case stagesErr != nil:
		// The plan is recorded (a changed template is held) but nobody
		// is admitted; a MemberCluster created later is looked for.
		cond = metav1.Condition{Type: v1alpha1.ConditionRolledOut, Status: metav1.ConditionFalse, Reason: ReasonInvalidStages,
			Message: "the policy's rollout.stages: " + stagesErr.Error() + "; no cluster is admitted until they are fixed"}
		next = invalidRecheck
	case in.Suspended:
		cond = metav1.Condition{Type: v1alpha1.ConditionRolledOut, Status: metav1.ConditionFalse, Reason: ReasonSuspended,
			Message: "federation suspended (" + v1alpha1.AnnotationSuspend + "): nobody is admitted; on resuming every copy not rolling is held and admitted again within the budget"}
	}
	if fo.Status.Rollout == nil && trivial(plan) && stagesErr == nil && !in.Suspended {
		// Never rolled out: nothing to record (a plan is written from the
		// first template change on), so creating a Deployment costs no
		// status write here.
		return reconcile.Result{RequeueAfter: next}, nil
	}
	if err := r.write(ctx, fo, plan, &cond); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// trivial reports whether a plan says only that every copy runs the
// revision or is being created: nothing waits, nothing holds a share.
func trivial(plan *v1alpha1.RolloutStatus) bool {
	for _, c := range plan.Clusters {
		if c.State != v1alpha1.RolloutDone && (c.State != v1alpha1.RolloutRolling || c.MaxSurge+c.MaxUnavailable > 0) {
			return false
		}
	}
	return true
}

// invalidRecheck is how often an object whose stages are invalid is looked
// at again (a MemberCluster a stage names may be created).
const invalidRecheck = 30 * time.Second

// nextLook is the sooner of a stall check and the end of a Pause gate
// (0: none).
func nextLook(stall time.Duration, plan *v1alpha1.RolloutStatus, now time.Time) time.Duration {
	if plan.PausedUntil == nil {
		return stall
	}
	left := max(plan.PausedUntil.Sub(now)+100*time.Millisecond, 100*time.Millisecond)
	if stall == 0 || left < stall {
		return left
	}
	return stall
}

// members describes the placed clusters' copies for the planner, with
// the clusters' labels (stages select by them). wait is true while a
// usable cluster's copy is not known yet.
func (r *Reconciler) members(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, now time.Time) (out []rollout.Member, clusterLabels map[string]map[string]string, wait bool, err error) {
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return nil, nil, true, nil
	}
	clusterLabels = map[string]map[string]string{}
	placed := map[string]bool{}
	clusters := fo.Placement()
	for _, p := range clusters {
		placed[p.Cluster] = true
	}
	// Clusters that left but still hold a copy (graceful eviction): a
	// share they roll with stays reserved while the copy is there.
	for _, c := range fo.Status.Clusters {
		if !placed[c.Cluster] {
			clusters = append(clusters, v1alpha1.ClusterPlacement{Cluster: c.Cluster})
		}
	}
	for _, p := range clusters {
		m := rollout.Member{Cluster: p.Cluster, Replicas: ptr.Deref(p.Replicas, 0), Leaving: !placed[p.Cluster]}
		mc := &v1alpha1.MemberCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: p.Cluster}, mc, client.UnsafeDisableDeepCopy); client.IgnoreNotFound(err) != nil {
			return nil, nil, false, err
		}
		if mc.Name == "" {
			mc = nil
		} else {
			clusterLabels[p.Cluster] = mc.Labels
		}
		c := copies.Of(ctx, r.Pool, mc, p.Cluster, kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
		switch {
		case c.Waiting():
			return nil, nil, true, nil
		case m.Leaving && c.Known() && c.Live == nil:
			continue // its copy is gone
		case c.Known():
			m.Usable = true
			if c.Live != nil {
				m.Stuck = deadlineExceeded(c.Live)
				describeCopy(&m, c.Live)
			}
		default:
			m.UnusableSince = unusableSince(mc, now)
		}
		out = append(out, m)
	}
	return out, clusterLabels, false, nil
}

// describeCopy fills in what the copy (its projection) reports.
func describeCopy(m *rollout.Member, live *unstructured.Unstructured) {
	m.HasCopy = true
	m.Revision = live.GetLabels()[v1alpha1.LabelRevision]
	observed, _, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
	m.Observed = observed >= live.GetGeneration()
	m.Generation, m.ObservedGeneration = live.GetGeneration(), observed
	m.SpecReplicas, _ = workload.Replicas(live)
	m.Total = statusCount(live, "replicas")
	m.Updated = statusCount(live, "updatedReplicas")
	m.Available = statusCount(live, "availableReplicas")
	if in := workload.RolloutInterpreter(live); in != nil {
		// A custom kind: its interpreter's reading of the copy (the
		// observed generation as it writes it, its pods, its health).
		m.Observed = in.Observed(live)
		m.Updated, m.Available = in.RolloutCounts(live)
		if pods, ok, _ := in.Pods(live); ok {
			m.Total = pods
		}
		if h, err := in.Health(live); err == nil && h.Failed != nil && *h.Failed {
			m.Stuck = true
		}
	}
}

func statusCount(u *unstructured.Unstructured, field string) int32 {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", field)
	return int32(n)
}

// deadlineExceeded reports whether a Deployment copy's rollout exceeded
// its progress deadline (Progressing False, ProgressDeadlineExceeded).
func deadlineExceeded(live *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Progressing" && m["status"] == "False" && m["reason"] == "ProgressDeadlineExceeded" {
			return true
		}
	}
	return false
}

// unusableSince is when a cluster stopped being usable: the last
// transition of its Ready condition, or now when it has none (a cluster
// gone or never Ready counts from now; its copy was not rolling).
func unusableSince(mc *v1alpha1.MemberCluster, now time.Time) time.Time {
	if mc == nil {
		return time.Time{}
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return now
}

// stallCheck is when to look again for a rolling cluster that is not
// usable to stall: its share goes back after StallAfter.
func (r *Reconciler) stallCheck(plan *v1alpha1.RolloutStatus, members []rollout.Member, now time.Time) time.Duration {
	var next time.Duration
	for i, m := range members {
		if m.Usable {
			continue
		}
		if c := rollout.Entry(plan, members[i].Cluster); c != nil && c.State == v1alpha1.RolloutRolling {
			left := m.UnusableSince.Add(r.stallAfter()).Sub(now) + time.Second
			if next == 0 || left < next {
				next = max(left, time.Second)
			}
		}
	}
	return next
}

// write applies the rollout status and condition (nil: none) when they
// differ from fo's.
func (r *Reconciler) write(ctx context.Context, fo *v1alpha1.FederatedObject, plan *v1alpha1.RolloutStatus, cond *metav1.Condition) error {
	st := v1alpha1.FederatedObjectStatus{Rollout: plan}
	if cond != nil {
		st.Conditions = []metav1.Condition{fedobj.Condition(fo.Status, *cond)}
	}
	replaced := fo.ResourceVersion
	written, err := fedobj.ApplyStatus(ctx, r.Client, fo, fedobj.StatusApply{Manager: v1alpha1.FieldManagerRollout, Status: st})
	if written {
		r.written.Wrote(replaced, fo)
	}
	return client.IgnoreNotFound(err)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) stallAfter() time.Duration { return cmp.Or(r.StallAfter, DefaultStallAfter) }
