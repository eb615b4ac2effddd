package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestFailoverDrops(t *testing.T) {
	mc := func(name string, taints ...corev1.Taint) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MemberClusterSpec{Taints: taints}}
	}
	taint := func(key string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Effect: effect}
	}
	clusters := []*v1alpha1.MemberCluster{
		mc("healthy"),
		mc("unreachable", taint(v1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule), taint(v1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute)),
		mc("notready", taint(v1alpha1.TaintNotReady, corev1.TaintEffectNoExecute)),
		mc("cordoned", taint(v1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule)),
		mc("draining", taint(v1alpha1.TaintDraining, corev1.TaintEffectNoExecute)),
		mc("custom", taint("example.com/x", corev1.TaintEffectNoExecute)),
	}
	at := func(names ...string) []v1alpha1.ClusterPlacement {
		out := make([]v1alpha1.ClusterPlacement, 0, len(names))
		for _, n := range names {
			out = append(out, v1alpha1.ClusterPlacement{Cluster: n})
		}
		return out
	}
	tests := []struct {
		name          string
		current, next []v1alpha1.ClusterPlacement
		want          []string
	}{
		{name: "nothing dropped", current: at("healthy", "unreachable"), next: at("healthy", "unreachable")},
		{name: "an unreachable cluster dropped", current: at("healthy", "unreachable"), next: at("healthy"), want: []string{"unreachable"}},
		{name: "both failed clusters dropped", current: at("unreachable", "notready", "healthy"), next: at("healthy"), want: []string{"unreachable", "notready"}},
		{name: "a healthy cluster dropped is not limited", current: at("healthy", "unreachable"), next: at("unreachable")},
		{name: "NoSchedule only is not limited", current: at("cordoned", "healthy"), next: at("healthy")},
		{name: "a drain is not limited", current: at("draining", "healthy"), next: at("healthy")},
		{name: "an operator's own NoExecute taint is not limited", current: at("custom", "healthy"), next: at("healthy")},
		{name: "a cluster that is gone is not limited", current: at("gone", "healthy"), next: at("healthy")},
		{name: "a first placement", current: nil, next: at("healthy")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := failoverDrops(tc.current, tc.next, clusters)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failoverDrops() (-want +got):\n%s", diff)
			}
		})
	}
}
