package schedule

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// followersOf maps a workload's FederatedObject to its followers'.
func followersOf(_ context.Context, o client.Object) []reconcile.Request {
	fo := o.(*v1alpha1.FederatedObject)
	out := make([]reconcile.Request, 0, len(fo.Spec.Followers))
	for _, f := range fo.Spec.Followers {
		// Followers are core-group kinds: their FederatedObject is "<name>.<kind>".
		name := (types.NamespacedName{Namespace: fo.Namespace, Name: f.Name})
		out = append(out, reconcile.Request{NamespacedName: followerName(name, f.Kind)})
	}
	return out
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	reqs, err := fedobj.All(ctx, r.Client, "")
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects")
	}
	return reqs
}

// clusterChanged passes MemberCluster events that can change a placement:
// creation, deletion, and changes of labels, taints, readiness, served
// kinds or deletion state; not the frequent capacity updates.
var clusterChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.MemberCluster), e.ObjectNew.(*v1alpha1.MemberCluster)
		return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
			o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
			meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) != meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) ||
			!equality.Semantic.DeepEqual(o.Status.APIResources, n.Status.APIResources)
	},
}

// limitsChanged passes FederatedObject updates that change the capacity
// limits in force (application failover).
var limitsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.FederatedObject), e.ObjectNew.(*v1alpha1.FederatedObject)
		return !equality.Semantic.DeepEqual(activeLimits(o), activeLimits(n))
	},
}

func activeLimits(fo *v1alpha1.FederatedObject) map[string]int32 {
	var m map[string]int32
	for _, l := range fo.Status.CapacityLimits {
		if l.LiftedAt == nil {
			if m == nil {
				m = map[string]int32{}
			}
			m[l.Cluster] = l.Replicas
		}
	}
	return m
}

// copiesChanged passes FederatedObject updates that change the clusters
// holding copies (status.clusters): an evicted copy keeps its followers.
var copiesChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.FederatedObject), e.ObjectNew.(*v1alpha1.FederatedObject)
		if len(o.Status.Clusters) != len(n.Status.Clusters) {
			return true
		}
		for i := range o.Status.Clusters {
			if o.Status.Clusters[i].Cluster != n.Status.Clusters[i].Cluster {
				return true
			}
		}
		return false
	},
}

// followerName is the FederatedObject name of a core-group follower.
func followerName(obj types.NamespacedName, kind string) types.NamespacedName {
	return fedobj.Request(templatesKey(kind, obj)).NamespacedName
}

func templatesKey(kind string, obj types.NamespacedName) templates.Key {
	return templates.Key{Kind: kind, Namespace: obj.Namespace, Name: obj.Name}
}
