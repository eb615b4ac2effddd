// Package fedobj holds what the propagation controllers share about
// FederatedObjects: the cache indexes they look them up by and the mapping
// from templates and clusters to reconcile requests.
package fedobj

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Field indexes on FederatedObjects.
const (
	// IndexPolicy indexes by PolicyKey of spec.policy.
	IndexPolicy = "flotilla.spec.policy"
	// IndexFollower indexes by FollowerKey of each spec.followers entry.
	IndexFollower = "flotilla.spec.followers"
	// IndexCluster indexes by each cluster in the placement or
	// status.clusters.
	IndexCluster = "flotilla.clusters"
)

// PolicyKey is "Kind/namespace/name".
func PolicyKey(ref v1alpha1.PolicyReference) string {
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// FollowerKey is "Kind/name".
func FollowerKey(kind, name string) string { return kind + "/" + name }

// SetupIndexes registers the indexes with the manager's cache. Call once.
func SetupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	fo := &v1alpha1.FederatedObject{}
	if err := indexer.IndexField(ctx, fo, IndexPolicy, func(o client.Object) []string {
		if p := o.(*v1alpha1.FederatedObject).Spec.Policy; p != nil {
			return []string{PolicyKey(*p)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index FederatedObjects by policy: %w", err)
	}
	if err := indexer.IndexField(ctx, fo, IndexFollower, func(o client.Object) []string {
		var out []string
		for _, f := range o.(*v1alpha1.FederatedObject).Spec.Followers {
			out = append(out, FollowerKey(f.Kind, f.Name))
		}
		return out
	}); err != nil {
		return fmt.Errorf("index FederatedObjects by follower: %w", err)
	}
	if err := indexer.IndexField(ctx, fo, IndexCluster, func(o client.Object) []string {
		f := o.(*v1alpha1.FederatedObject)
		seen := map[string]bool{}
		var out []string
		for _, p := range f.Placement() {
			if !seen[p.Cluster] {
				seen[p.Cluster] = true
				out = append(out, p.Cluster)
			}
		}
		for _, c := range f.Status.Clusters {
			if !seen[c.Cluster] {
				seen[c.Cluster] = true
				out = append(out, c.Cluster)
			}
		}
		return out
	}); err != nil {
		return fmt.Errorf("index FederatedObjects by cluster: %w", err)
	}
	return nil
}

// Request is the reconcile request of a template's FederatedObject.
func Request(k templates.Key) reconcile.Request {
	return reconcile.Request{NamespacedName: k.FederatedName()}
}

// ForCluster returns the requests of the FederatedObjects placed on, or
// holding a copy in, a cluster.
func ForCluster(ctx context.Context, c client.Reader, cluster string) ([]reconcile.Request, error) {
	list := &v1alpha1.FederatedObjectList{}
	// Only names are read: the cached objects are shared, not copied (a
	// cluster's change maps to every object placed there).
	if err := c.List(ctx, list, client.MatchingFields{IndexCluster: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return requests(list), nil
}

// OnCluster is a handler.MapFunc from a MemberCluster to the requests of
// the FederatedObjects placed on it or holding a copy there (ForCluster).
func OnCluster(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs, err := ForCluster(ctx, c, o.GetName())
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects of cluster", "cluster", o.GetName())
		}
		return reqs
	}
}

// OfPolicy is a handler.MapFunc from a PropagationPolicy or
// ClusterPropagationPolicy to the requests of the FederatedObjects it
// propagates (spec.policy).
func OfPolicy(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		ref := v1alpha1.PolicyReference{Kind: policy.KindClusterPropagationPolicy, Name: o.GetName()}
		if _, ok := o.(*v1alpha1.PropagationPolicy); ok {
			ref = v1alpha1.PolicyReference{Kind: policy.KindPropagationPolicy, Namespace: o.GetNamespace(), Name: o.GetName()}
		}
		list := &v1alpha1.FederatedObjectList{}
		if err := c.List(ctx, list, client.MatchingFields{IndexPolicy: PolicyKey(ref)}, client.UnsafeDisableDeepCopy); err != nil { // names only
			ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects of policy", "policy", ref)
			return nil
		}
		return requests(list)
	}
}

// All returns the requests of every FederatedObject (in a namespace, or all
// when namespace is "").
func All(ctx context.Context, c client.Reader, namespace string) ([]reconcile.Request, error) {
	list := &v1alpha1.FederatedObjectList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil { // names only
		return nil, err
	}
	return requests(list), nil
}

func requests(list *v1alpha1.FederatedObjectList) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fo := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: fo.Namespace, Name: fo.Name}})
	}
	return out
}

// Template returns the key of a FederatedObject's template.
func Template(fo *v1alpha1.FederatedObject) templates.Key {
	return templates.KeyOfReference(fo.Spec.Template)
}

// PolicySpec returns the spec of the propagation policy ref names, nil if
// it is gone.
func PolicySpec(ctx context.Context, c client.Reader, ref v1alpha1.PolicyReference) (*v1alpha1.PropagationSpec, error) {
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	switch ref.Kind {
	case policy.KindPropagationPolicy:
		p := &v1alpha1.PropagationPolicy{}
		if err := c.Get(ctx, key, p); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &p.Spec, nil
	case policy.KindClusterPropagationPolicy:
		p := &v1alpha1.ClusterPropagationPolicy{}
		if err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, p); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &p.Spec, nil
	}
	return nil, nil
}

// Scheduled reports whether the scheduler has decided on fo at least once
// (or it holds copies): before that, its empty placement means "not yet",
// not "nowhere".
func Scheduled(fo *v1alpha1.FederatedObject) bool {
	return len(fo.Placement()) > 0 || len(fo.Status.Clusters) > 0 ||
		meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled) != nil
}

// Divided reports whether fo's placement gives its clusters replicas (a
// workload divided over them, not a copy in each).
func Divided(fo *v1alpha1.FederatedObject) bool {
	for _, p := range fo.Placement() {
		if p.Replicas != nil {
			return true
		}
	}
	return false
}

// RolloutChanged passes FederatedObject updates that change what a
// federated rollout admits (status.rollout's revision, states and
// shares; not the times).
var RolloutChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.FederatedObject), e.ObjectNew.(*v1alpha1.FederatedObject)
		return rolloutKey(o.Status.Rollout) != rolloutKey(n.Status.Rollout)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// rolloutKey is what of a rollout status the copies are rendered from.
func rolloutKey(st *v1alpha1.RolloutStatus) string {
	if st == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(st.Revision)
	for _, c := range st.Clusters {
		fmt.Fprintf(&b, "|%s=%s/%d/%d", c.Cluster, c.State, c.MaxSurge, c.MaxUnavailable)
	}
	return b.String()
}

// PlacementChanged passes FederatedObject updates that change the
// placement in force, and the scheduler's first decision (also when it
// places the object nowhere).
var PlacementChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.FederatedObject), e.ObjectNew.(*v1alpha1.FederatedObject)
		return !equality.Semantic.DeepEqual(o.Placement(), n.Placement()) || Scheduled(o) != Scheduled(n)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// KeptForOrphans returns the clusters a follower keeps its copies in for
// workloads that were released with theirs (sorted, without duplicates).
func KeptForOrphans(fo *v1alpha1.FederatedObject) []string {
	v := fo.Annotations[v1alpha1.AnnotationKeptForOrphans]
	if v == "" {
		return nil
	}
	var out []string
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
