package federate

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// policySource maps a policy change to the templates it selects now (by
// selector or label) and those it selected before (its FederatedObjects).
func policySource[T client.Object](mgr ctrl.Manager, r *Reconciler, obj T) source.TypedSource[templates.Key] {
	return source.TypedKind(mgr.GetCache(), obj, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, p T) []templates.Key {
		var ref v1alpha1.PolicyReference
		var spec *v1alpha1.PropagationSpec
		switch p := any(p).(type) {
		case *v1alpha1.PropagationPolicy:
			ref, spec = v1alpha1.PolicyReference{Kind: policy.KindPropagationPolicy, Namespace: p.Namespace, Name: p.Name}, &p.Spec
		case *v1alpha1.ClusterPropagationPolicy:
			ref, spec = v1alpha1.PolicyReference{Kind: policy.KindClusterPropagationPolicy, Name: p.Name}, &p.Spec
		}
		keys := r.Templates.LabelledFor(ref.Namespace, ref.Name)
		for _, s := range spec.ResourceSelectors {
			gk, ok := selectorKind(s)
			if !ok {
				continue
			}
			ns := ref.Namespace
			if ns == "" {
				ns = s.Namespace
			}
			objs, err := r.Templates.List(gk, ns)
			if err != nil {
				continue // not discovered or not synced: its informer's events come later
			}
			// A label selector that cannot be read may have frozen any
			// object of the kind (PolicyUnreadable): its fix, or the
			// policy's deletion, wakes them all.
			match := s
			if s.LabelSelector != nil {
				if _, err := metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
					match.LabelSelector = nil
				}
			}
			for _, o := range objs {
				if policy.Selects(match, o, ref.Namespace == "") {
					keys = append(keys, templates.KeyOf(o))
				}
			}
		}
		fos := &v1alpha1.FederatedObjectList{}
		if err := r.Client.List(ctx, fos, client.MatchingFields{fedobj.IndexPolicy: fedobj.PolicyKey(ref)}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List FederatedObjects of policy", "policy", ref)
		}
		for i := range fos.Items {
			keys = append(keys, fedobj.Template(&fos.Items[i]))
		}
		return keys
	}))
}

// selectorKind returns the group and kind a selector names.
func selectorKind(s v1alpha1.ResourceSelector) (gk schema.GroupKind, ok bool) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(s.APIVersion)
	u.SetKind(s.Kind)
	return u.GroupVersionKind().GroupKind(), s.Kind != ""
}

// federatedObjectSource maps a FederatedObject to its template and its
// followers.
func federatedObjectSource(mgr ctrl.Manager) source.TypedSource[templates.Key] {
	return source.TypedKind(mgr.GetCache(), &v1alpha1.FederatedObject{}, handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, fo *v1alpha1.FederatedObject) []templates.Key {
		keys := []templates.Key{fedobj.Template(fo)}
		for _, f := range fo.Spec.Followers {
			keys = append(keys, templates.Key{Kind: f.Kind, Namespace: fo.Namespace, Name: f.Name})
		}
		return keys
	}))
}
