package propagate

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
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
	for _, name := range copies.Unrecorded(r.Pool, func(c string) bool { return placed[c] || known[c] }, kind.GVR, tmpl.GetNamespace(), tmpl.GetName()) {
		out = append(out, v1alpha1.ClusterPropagationStatus{Cluster: name, Reason: v1alpha1.PropagationDeleting})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}
