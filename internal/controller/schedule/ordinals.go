package schedule

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ordinals"
)

// withOrdinals gives a divided StatefulSet's placement its clusters'
// ordinal ranges, keeping those of prev (the placement in force) where
// they are; any other placement carries none.
func withOrdinals(u *framework.Unit, tmpl *unstructured.Unstructured, prev, next []v1alpha1.ClusterPlacement) []v1alpha1.ClusterPlacement {
	if base, ok := scheduler.FederatedOrdinals(u, tmpl); ok && len(next) > 0 {
		return ordinals.Assign(prev, next, base)
	}
	var out []v1alpha1.ClusterPlacement
	for i, p := range next {
		if p.OrdinalStart != nil {
			if out == nil {
				out = append([]v1alpha1.ClusterPlacement(nil), next...)
			}
			out[i].OrdinalStart = nil
		}
	}
	if out == nil {
		return next
	}
	return out
}

// ordinalsInForce reports whether the placement in force already has the
// ordinal ranges the object needs (none, or those withOrdinals keeps), so
// that an unchanged basis may skip the decision.
func ordinalsInForce(u *framework.Unit, tmpl *unstructured.Unstructured, current []v1alpha1.ClusterPlacement) bool {
	return equality.Semantic.DeepEqual(withOrdinals(u, tmpl, current, current), current)
}
