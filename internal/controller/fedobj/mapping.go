package fedobj

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// MemberEventRequest maps an event of a managed member object to the
// request of its FederatedObject.
func MemberEventRequest(c *templates.Cache, e member.ObjectEvent) (reconcile.Request, bool) {
	kind, ok := c.KindOf(e.Resource.GroupResource())
	if !ok {
		return reconcile.Request{}, false
	}
	return Request(templates.Key{Group: kind.GVK.Group, Kind: kind.GVK.Kind, Namespace: e.Namespace, Name: e.Name}), true
}

// ReadinessOrLabelsChanged passes MemberCluster updates that change its
// Ready condition's status or its labels (override rules select clusters
// by label).
var ReadinessOrLabelsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*v1alpha1.MemberCluster), e.ObjectNew.(*v1alpha1.MemberCluster)
		ready := func(mc *v1alpha1.MemberCluster) bool {
			return meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady)
		}
		return ready(o) != ready(n) || !equality.Semantic.DeepEqual(o.Labels, n.Labels)
	},
}
