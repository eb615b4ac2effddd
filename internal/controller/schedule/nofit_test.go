package schedule

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestNoFit(t *testing.T) {
	mc := func(name string, taints ...corev1.Taint) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MemberClusterSpec{Taints: taints}}
	}
	force := corev1.Taint{Key: v1alpha1.TaintDraining, Value: v1alpha1.DrainForce, Effect: corev1.TaintEffectNoExecute}
	plain := corev1.Taint{Key: v1alpha1.TaintDraining, Effect: corev1.TaintEffectNoExecute}
	a, b := v1alpha1.ClusterPlacement{Cluster: "a", Replicas: ptr.To[int32](2)}, v1alpha1.ClusterPlacement{Cluster: "b", Replicas: ptr.To[int32](3)}
	tests := []struct {
		name     string
		current  []v1alpha1.ClusterPlacement
		clusters []*v1alpha1.MemberCluster
		mode     v1alpha1.EmptyPlacement
		job      bool
		want     []string
		note     string
	}{
		{name: "never placed", clusters: []*v1alpha1.MemberCluster{mc("a")}},
		{name: "kept by default", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("a"), mc("b")}, want: []string{"a", "b"}, note: "keeping the current placement"},
		{name: "kept with a plain drain", current: []v1alpha1.ClusterPlacement{a}, clusters: []*v1alpha1.MemberCluster{mc("a", plain)}, want: []string{"a"}, note: "keeping"},
		{name: "allowed to empty", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("a"), mc("b")}, mode: v1alpha1.EmptyPlacementAllow, note: "emptied"},
		{name: "force-drained cluster leaves", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("a", force), mc("b")}, want: []string{"b"}, note: "keeping"},
		{name: "only force-drained", current: []v1alpha1.ClusterPlacement{a}, clusters: []*v1alpha1.MemberCluster{mc("a", force)}, note: "--force"},
		{name: "a divided Job keeps a force-drained cluster", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("a", force), mc("b")}, mode: v1alpha1.EmptyPlacementAllow, job: true, want: []string{"a", "b"}, note: "a divided Job's placement is kept once made"},
		{name: "a divided Job loses a gone cluster", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("b")}, job: true, want: []string{"b"}, note: "keeping the current placement (b=3)"},
		{name: "gone cluster leaves", current: []v1alpha1.ClusterPlacement{a, b}, clusters: []*v1alpha1.MemberCluster{mc("b")}, want: []string{"b"}, note: "keeping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, note := noFit(tc.current, tc.clusters, tc.mode, tc.job)
			var names []string
			for _, p := range got {
				names = append(names, p.Cluster)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("placement = %v, want %v", names, tc.want)
			}
			if !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want it to contain %q", note, tc.note)
			}
		})
	}
}
