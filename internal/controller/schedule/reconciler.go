// Package schedule is the controller that decides each FederatedObject's
// placement: it calls the scheduler for objects a policy propagates, and
// places followers on the union of the clusters of the workloads that
// reference them. It writes spec.placement and the Scheduled condition.
package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "schedule"

// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters,verbs=get;list;watch

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

	queue trigger.Queue[reconcile.Request]
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// A template's replicas (or anything else) changed.
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.FederatedObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A leader's placement moves its followers.
		Watches(&v1alpha1.FederatedObject{}, handler.EnqueueRequestsFromMapFunc(followersOf), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.forPolicy), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterPropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.forPolicy), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(clusterChanged)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// Reconcile places one FederatedObject.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, req.NamespacedName, fo); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fo.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var placement []v1alpha1.ClusterPlacement
	var message string
	if fo.Spec.Policy == nil {
		var err error
		if placement, err = r.followerPlacement(ctx, fo); err != nil {
			return reconcile.Result{}, err
		}
		message = fmt.Sprintf("follows its workloads to %d clusters", len(placement))
	} else {
		spec, err := r.policySpec(ctx, *fo.Spec.Policy)
		if err != nil {
			return reconcile.Result{}, err
		}
		if spec == nil {
			return reconcile.Result{}, nil // the federate controller releases the object
		}
		tmpl, err := r.Templates.Get(fedobj.Template(fo))
		if errors.Is(err, templates.ErrNotSynced) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		if err != nil || tmpl == nil {
			return reconcile.Result{}, nil // the federate controller deals with it
		}
		clusters := &v1alpha1.MemberClusterList{}
		if err := r.Client.List(ctx, clusters); err != nil {
			return reconcile.Result{}, err
		}
		in := scheduler.Input{Policy: spec, Clusters: clusters.Items, Current: fo.Spec.Placement, Seed: fo.Name}
		if n, ok := workload.Replicas(tmpl); ok {
			in.Replicas = ptr.To(n)
		}
		res := scheduler.Schedule(in)
		placement, message = res.Placement, res.Message
	}
	if !equality.Semantic.DeepEqual(placement, fo.Spec.Placement) && !(len(placement) == 0 && len(fo.Spec.Placement) == 0) {
		fo.Spec.Placement = placement
		if err := r.Client.Update(ctx, fo); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
			}
			return reconcile.Result{}, fmt.Errorf("update placement of %s: %w", req, err)
		}
		ctrl.LoggerFrom(ctx).Info("Placed", "placement", describe(placement))
		if r.Recorder != nil {
			r.Recorder.Eventf(fo, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "%s: %s", describe(placement), message)
		}
	}
	return reconcile.Result{}, r.setCondition(ctx, fo, placement, message)
}

// setCondition records the decision in the Scheduled condition.
func (r *Reconciler) setCondition(ctx context.Context, fo *v1alpha1.FederatedObject, placement []v1alpha1.ClusterPlacement, message string) error {
	cond := metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", Message: message, ObservedGeneration: fo.Generation}
	if len(placement) == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, "NoClusters"
	}
	before := fo.Status.DeepCopy()
	meta.SetStatusCondition(&fo.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before, &fo.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, fo); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	return nil
}

// followerPlacement is the union of the clusters of the workloads that
// reference a follower.
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
		for _, p := range l.Spec.Placement {
			names = append(names, p.Cluster)
		}
	}
	if live == 0 {
		// No workload references it any more: the federate controller
		// releases it and its copies stay where they are.
		return fo.Spec.Placement, nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]v1alpha1.ClusterPlacement, 0, len(names))
	for _, n := range names {
		out = append(out, v1alpha1.ClusterPlacement{Cluster: n})
	}
	return out, nil
}

// policySpec returns the spec of a policy, nil if it is gone.
func (r *Reconciler) policySpec(ctx context.Context, ref v1alpha1.PolicyReference) (*v1alpha1.PropagationSpec, error) {
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	var obj client.Object
	var spec *v1alpha1.PropagationSpec
	switch ref.Kind {
	case policy.KindPropagationPolicy:
		p := &v1alpha1.PropagationPolicy{}
		obj, spec = p, &p.Spec
	case policy.KindClusterPropagationPolicy:
		p := &v1alpha1.ClusterPropagationPolicy{}
		obj, spec = p, &p.Spec
	default:
		return nil, nil
	}
	if err := r.Client.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return spec, nil
}

func describe(placement []v1alpha1.ClusterPlacement) string {
	if len(placement) == 0 {
		return "no clusters"
	}
	parts := make([]string, 0, len(placement))
	for _, p := range placement {
		if p.Replicas != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", p.Cluster, *p.Replicas))
		} else {
			parts = append(parts, p.Cluster)
		}
	}
	return strings.Join(parts, ", ")
}
