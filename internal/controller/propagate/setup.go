package propagate

import (
	"cmp"
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// SetupWithManager registers the controller with mgr. It watches
// FederatedObjects, templates, override and propagation policies, the
// clusters' readiness and labels, and the managed objects in members (so
// that drift is reverted within seconds).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	r.Pool.Subscribe(func(e member.ObjectEvent) {
		req, ok := fedobj.MemberEventRequest(r.Templates, e)
		if !ok {
			return
		}
		if e.StatusOnly {
			// Drift is in spec, labels or annotations; status matters only
			// to an object whose evicted copy waits for its replacements.
			if _, waiting := r.evicting.Load(req.NamespacedName); !waiting {
				return
			}
		}
		r.queue.Add(req)
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
		For(&v1alpha1.FederatedObject{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting, fedobj.PlacementChanged, fedobj.RolloutChanged))).
		Watches(&v1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(notDeleted)).
		Watches(&v1alpha1.OverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.ofDeletedPolicy), builder.WithPredicates(deleted)).
		Watches(&v1alpha1.ClusterOverridePolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace)).
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(notDeleted, predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.ofDeletedPolicy), builder.WithPredicates(deleted)).
		Watches(&v1alpha1.ClusterPropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(fedobj.OnCluster(r.Client)), builder.WithPredicates(fedobj.ReadinessOrLabelsChanged)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 8)}).
		Complete(r)
}

// inNamespace maps a policy to the FederatedObjects of its namespace (all
// of them for a cluster-scoped policy).
func (r *Reconciler) inNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	reqs, err := fedobj.All(ctx, r.Client, o.GetNamespace())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects")
	}
	return reqs
}

// ofDeletedPolicy maps a deleted OverridePolicy or PropagationPolicy like
// inNamespace, but to nothing while its namespace is being deleted (the
// namespace controller deleting its policies), asking the host when the
// cache has not seen that deletion yet: a pass then would strip the
// namespace's overrides, perhaps gone already, from copies that stay,
// before the pass that sees the namespace's deletion freezes them.
func (r *Reconciler) ofDeletedPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	if r.namespaceGoing(ctx, o.GetNamespace()) {
		return nil
	}
	return r.inNamespace(ctx, o)
}

// deleted passes delete events only; notDeleted passes the others.
var (
	deleted    = predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false }, GenericFunc: func(event.GenericEvent) bool { return false }}
	notDeleted = predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }}
)

// deleting passes updates that start a deletion.
var deleting = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}
