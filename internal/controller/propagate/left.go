package propagate

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// leftClusters are the clusters that hold (or may hold) a copy but are not
// in the placement: those recorded in status, and those whose cache shows a
// managed copy the status never recorded (a write whose status update was
// lost to a conflict or a crash).
func (r *Reconciler) leftClusters(fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, placed map[string]bool) []v1alpha1.ClusterPropagationStatus {
	var out []v1alpha1.ClusterPropagationStatus
	known := map[string]bool{}
	for _, c := range fo.Status.Clusters {
		known[c.Cluster] = true
		if !placed[c.Cluster] {
			out = append(out, c)
		}
	}
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return out
	}
	for _, name := range r.Pool.Names() {
		if placed[name] || known[name] {
			continue
		}
		sess := r.Pool.Get(name)
		if sess == nil {
			continue
		}
		// Only a copy Flotilla wrote: an object that merely carries the
		// managed label in a cluster the object was never placed on is not
		// ours to delete.
		if obj, found := sess.PeekManagedObject(kind.GVR, tmpl.GetNamespace(), tmpl.GetName()); found && dispatch.Written(obj) {
			out = append(out, v1alpha1.ClusterPropagationStatus{Cluster: name, Reason: v1alpha1.PropagationDeleting})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}
