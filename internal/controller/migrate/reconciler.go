// Package migrate is the controller behind application failover: it
// watches the replicas each member runs for a Divide workload, and when
// some stay Unschedulable there for longer than the policy allows it
// records a capacity limit for that member in the FederatedObject's status
// (status.capacityLimits). The scheduler gives the member at most that
// many replicas, so the rest move to members with room. A limit is held
// for a while (longer each time it is set again) and lifted only when the
// member shows room for the replicas that moved, so replicas never
// oscillate between members.
package migrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/trigger"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "migrate"

// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=get;patch
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters;propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch

// Reconciler keeps FederatedObjects' capacity limits.
type Reconciler struct {
	// Client reads (cached) and writes the host.
	Client client.Client
	// Templates is the host template cache.
	Templates *templates.Cache
	// Pool holds the member sessions.
	Pool *member.Pool
	// Recorder records events on templates.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles bounds parallel reconciles (default 4).
	MaxConcurrentReconciles int

	queue trigger.Queue[reconcile.Request]
}

// SetupWithManager registers the controller with mgr. Besides
// FederatedObjects it follows templates, policies (failover settings),
// clusters turning Ready (a cluster not usable is left out of a pass) or
// going, the status of the member copies (their pod counts) and the member
// pods that turn unschedulable, so that nothing needs polling.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Templates.Subscribe(func(k templates.Key) { r.queue.Add(fedobj.Request(k)) })
	r.Pool.Subscribe(func(e member.ObjectEvent) {
		if req, ok := fedobj.MemberEventRequest(r.Templates, e); ok {
			r.queue.Add(req)
		}
	})
	r.Pool.SubscribeUnschedulable(func(e member.UnschedulableEvent) {
		for _, w := range workload.PodOwners(e.Owner, e.OwnerName, e.Labels) {
			r.queue.Add(fedobj.Request(templates.Key{Group: w.Group, Kind: w.Kind, Namespace: e.Namespace, Name: w.Name}))
		}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.FederatedObject{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, fedobj.PlacementChanged))).
		Watches(&v1alpha1.PropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(fedobj.OfPolicy(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ClusterPropagationPolicy{}, handler.EnqueueRequestsFromMapFunc(fedobj.OfPolicy(r.Client)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(fedobj.OnCluster(r.Client)), builder.WithPredicates(readyOrGone)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Complete(r)
}

// readyOrGone passes MemberClusters that turn Ready (their placed
// objects were left out while they were not) or are deleted (their limits
// go).
var readyOrGone = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		ready := func(o client.Object) bool {
			mc, ok := o.(*v1alpha1.MemberCluster)
			return ok && meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady)
		}
		return !ready(e.ObjectOld) && ready(e.ObjectNew)
	},
}

// Reconcile updates one FederatedObject's capacity limits.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fo := &v1alpha1.FederatedObject{}
	// Read-only: the cached object is shared, not copied; write copies it
	// before a write, which decodes the answer into it.
	if err := r.Client.Get(ctx, req.NamespacedName, fo, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fo.DeletionTimestamp.IsZero() || fo.Spec.Policy == nil {
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
	if tmpl == nil || tmpl.GetUID() != fo.Spec.Template.UID {
		return reconcile.Result{}, nil
	}
	spec, err := fedobj.PolicySpec(ctx, r.Client, *fo.Spec.Policy)
	if err != nil || spec == nil {
		return reconcile.Result{}, err
	}
	threshold, enabled := settings(spec, tmpl)
	if !enabled {
		return reconcile.Result{}, r.write(ctx, fo, tmpl, nil, nil)
	}
	clusters, err := r.clusters(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	obs, waiting := r.observe(ctx, fo, tmpl, clusters)
	// The pod template's requests are converted only when a limit is
	// weighed (a typed conversion on every pass would be most of its cost).
	var requests corev1.ResourceList
	converted := false
	hasRoom := func(name string, n int32) bool {
		if !converted {
			requests, converted = scheduler.Requests(tmpl), true
		}
		return fits(clusters[name], requests, n)
	}
	limits, recheck, changes := nextLimits(ofClusters(fo.Status.CapacityLimits, clusters), obs, threshold, hasRoom, time.Now())
	if err := r.write(ctx, fo, tmpl, limits, changes); err != nil {
		return reconcile.Result{}, err
	}
	if waiting && (recheck == 0 || recheck > time.Second) {
		recheck = time.Second
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// ofClusters drops the limits of clusters that are no longer members (a
// limit there could never be lifted, and a cluster joined again under the
// name starts afresh).
func ofClusters(limits []v1alpha1.CapacityLimit, clusters map[string]*v1alpha1.MemberCluster) []v1alpha1.CapacityLimit {
	return slices.DeleteFunc(slices.Clone(limits), func(l v1alpha1.CapacityLimit) bool { return clusters[l.Cluster] == nil })
}

// settings returns the policy's Unschedulable threshold and whether
// application failover applies to the object: a Divide workload of a kind
// whose pods Flotilla can find, except a StatefulSet numbered across the
// federation, whose members keep their ranges of ordinals (a limit would
// move nothing).
func settings(spec *v1alpha1.PropagationSpec, tmpl *unstructured.Unstructured) (time.Duration, bool) {
	seconds := int32(v1alpha1.DefaultUnschedulableSeconds)
	if f := spec.Failover; f != nil && f.Application != nil {
		if f.Application.Disabled {
			return 0, false
		}
		if f.Application.UnschedulableSeconds != nil {
			seconds = *f.Application.UnschedulableSeconds
		}
	}
	if spec.Placement.ReplicaScheduling.Type != v1alpha1.ReplicaSchedulingDivide || !workload.Migratable(tmpl) {
		return 0, false
	}
	if tmpl.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "apps", Kind: "StatefulSet"}) &&
		tmpl.GetAnnotations()[v1alpha1.AnnotationOrdinals] != v1alpha1.OrdinalsPerMember {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

func (r *Reconciler) clusters(ctx context.Context) (map[string]*v1alpha1.MemberCluster, error) {
	list := &v1alpha1.MemberClusterList{}
	// Read-only: the cached objects are shared, not copied (their lists of
	// API resources make copies cost more than the rest of the pass).
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make(map[string]*v1alpha1.MemberCluster, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// observe reads, for each usable placed cluster (copies.Usable), the
// workload's pods there from the member caches. waiting says some cache is still filling.
func (r *Reconciler) observe(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, clusters map[string]*v1alpha1.MemberCluster) (obs []observation, waiting bool) {
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return nil, false
	}
	for _, p := range fo.Placement() {
		if p.Replicas == nil || *p.Replicas == 0 {
			continue
		}
		c := copies.Of(ctx, r.Pool, clusters[p.Cluster], p.Cluster, kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
		if c.Syncing() {
			// A starting session is not waited for: a cluster controller
			// that never starts it would make this a one-second loop.
			waiting = true
			continue
		}
		if !c.Known() || c.Live == nil {
			continue
		}
		sess, live := c.Session, c.Live
		selector, ok := workload.PodSelector(live)
		if !ok {
			continue
		}
		pods, ok := workload.PodCount(live)
		if !ok {
			continue // the member's controller has not caught up with the spec
		}
		unschedulable, state := sess.UnschedulablePods(tmpl.GetNamespace(), selector)
		switch state {
		case member.CacheSyncing:
			waiting = true
			continue
		case member.CacheStalled:
			// The member forbids or fails the list of its pending pods:
			// the cluster is left out, looked at again at the usual
			// recheck, not every second.
			continue
		}
		o := observation{cluster: p.Cluster, placed: *p.Replicas, pods: pods}
		for _, pod := range unschedulable {
			o.unschedulable = append(o.unschedulable, pod.Since)
		}
		obs = append(obs, o)
	}
	return obs, waiting
}

// fits reports whether a cluster's available resources hold n more
// replicas with the given requests (one pod each).
func fits(mc *v1alpha1.MemberCluster, requests corev1.ResourceList, n int32) bool {
	if mc == nil || !meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady) {
		return false
	}
	need := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(n), resource.DecimalSI)}
	for name, q := range requests {
		total := q.DeepCopy()
		for i := int32(1); i < n; i++ {
			total.Add(q)
		}
		need[name] = total
	}
	for name, q := range need {
		avail, ok := mc.Status.Resources.Available[name]
		if !ok || avail.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// write records limits in fo's status when they changed, with an event on
// the template for each change.
func (r *Reconciler) write(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, limits []v1alpha1.CapacityLimit, changes []change) error {
	if len(limits) == 0 {
		limits = nil
	}
	st := v1alpha1.FederatedObjectStatus{CapacityLimits: limits}
	if equality.Semantic.DeepEqual(fedobj.Owned(fo.Status, v1alpha1.FieldManagerMigrate), st) {
		return nil
	}
	// fo is the cache's: the patch's answer goes into a copy.
	written, err := fedobj.ApplyStatus(ctx, r.Client, fo.DeepCopy(), fedobj.StatusApply{Manager: v1alpha1.FieldManagerMigrate, Status: st})
	if err != nil || !written {
		return client.IgnoreNotFound(err)
	}
	logger := ctrl.LoggerFrom(ctx)
	for _, c := range changes {
		logger.Info("Capacity limit", "cluster", c.cluster, "lifted", c.lifted, "message", c.message)
		if r.Recorder == nil {
			continue
		}
		if c.lifted {
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeNormal, "CapacityLimitLifted", "Migrate", "cluster %s: %s", c.cluster, c.message)
		} else {
			r.Recorder.Eventf(tmpl, nil, corev1.EventTypeWarning, "Migrating", "Migrate", "cluster %s: %s; the scheduler moves the rest to clusters with room", c.cluster, c.message)
		}
	}
	return nil
}
