package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestBasis(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	unit := func(change func(*framework.Unit)) *framework.Unit {
		u := &framework.Unit{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Replicas: ptr.To[int32](6),
			Placement: &v1alpha1.Placement{Tolerations: []corev1.Toleration{{Key: "maint", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}}}}
		if change != nil {
			change(u)
		}
		return u
	}
	cluster := func(change func(*v1alpha1.MemberCluster)) []*v1alpha1.MemberCluster {
		c := &v1alpha1.MemberCluster{}
		c.Name = "member-1"
		c.Labels = map[string]string{"region": "eu"}
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
		c.Status.Resources.Available = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		if change != nil {
			change(c)
		}
		return []*v1alpha1.MemberCluster{c}
	}
	base := Basis(unit(nil), cluster(nil), "default", now)
	tests := []struct {
		name     string
		u        *framework.Unit
		clusters []*v1alpha1.MemberCluster
		profile  string
		at       time.Time
		same     bool
	}{
		{"identical inputs", unit(nil), cluster(nil), "default", now, true},
		{"free capacity changed", unit(nil), cluster(func(c *v1alpha1.MemberCluster) {
			c.Status.Resources.Available = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), "default", now, true},
		{"current placement changed", unit(func(u *framework.Unit) { u.Current = []v1alpha1.ClusterPlacement{{Cluster: "member-1"}} }), cluster(nil), "default", now, true},
		{"replicas changed", unit(func(u *framework.Unit) { u.Replicas = ptr.To[int32](9) }), cluster(nil), "default", now, false},
		{"labels changed", unit(nil), cluster(func(c *v1alpha1.MemberCluster) { c.Labels["region"] = "us" }), "default", now, false},
		{"readiness changed", unit(nil), cluster(func(c *v1alpha1.MemberCluster) { c.Status.Conditions[0].Status = metav1.ConditionFalse }), "default", now, false},
		{"taint added", unit(nil), cluster(func(c *v1alpha1.MemberCluster) {
			c.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
		}), "default", now, false},
		{"profile changed", unit(nil), cluster(nil), "p@2", now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Basis(tt.u, tt.clusters, tt.profile, tt.at) == base; got != tt.same {
				t.Errorf("same basis = %v, want %v", got, tt.same)
			}
		})
	}

	// What the cluster serves: discovery, and the member's grant on the
	// unit's kind (a restricted join), change the basis; a grant on another
	// kind does not.
	served := func(deploymentReadOnly, configMapReadOnly bool) []*v1alpha1.MemberCluster {
		return cluster(func(c *v1alpha1.MemberCluster) {
			c.Status.APIResources = []v1alpha1.APIResource{
				{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", ReadOnly: configMapReadOnly},
				{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", ReadOnly: deploymentReadOnly},
			}
		})
	}
	writable := Basis(unit(nil), served(false, false), "default", now)
	if writable == base {
		t.Error("basis unchanged by the first discovery")
	}
	if Basis(unit(nil), served(true, false), "default", now) == writable {
		t.Error("basis unchanged when the unit's kind became read-only in the member")
	}
	if Basis(unit(nil), served(false, true), "default", now) != writable {
		t.Error("basis changed when another kind became read-only")
	}

	// A tolerated NoExecute taint: the basis changes when its period ends,
	// and NextExpiry says when that is.
	added := metav1.NewTime(now.Add(-30 * time.Second))
	tainted := cluster(func(c *v1alpha1.MemberCluster) {
		c.Spec.Taints = []corev1.Taint{{Key: "maint", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	})
	before := Basis(unit(nil), tainted, "default", now)
	if after := Basis(unit(nil), tainted, "default", now.Add(29*time.Second)); after != before {
		t.Error("basis changed before the toleration period ended")
	}
	if after := Basis(unit(nil), tainted, "default", now.Add(31*time.Second)); after == before {
		t.Error("basis unchanged after the toleration period ended")
	}
	if got, want := NextExpiry(unit(nil), tainted, now), added.Add(60*time.Second); !got.Equal(want) {
		t.Errorf("NextExpiry = %v, want %v", got, want)
	}
}

func TestRequests(t *testing.T) {
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "64Mi"}}},
				map[string]any{"name": "b", "resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}},
			},
			"initContainers": []any{map[string]any{"name": "init", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}},
		}}},
	}}
	got := Requests(d)
	if cpu := got[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("cpu = %s, want 1 (the init container's, the larger)", cpu.String())
	}
	if mem := got[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("memory = %s, want 64Mi", mem.String())
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	if got := Requests(cm); got != nil {
		t.Errorf("ConfigMap requests = %v, want nil", got)
	}
}

func TestSticky(t *testing.T) {
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	kruise := schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}
	cases := []struct {
		name       string
		policy     bool
		gk         schema.GroupKind
		annotation string
		want       bool
	}{
		{"a StatefulSet is sticky by default", false, sts, "", true},
		{"a StatefulSet may ask not to be", false, sts, "false", false},
		{"a Deployment is not sticky by default", false, deploy, "", false},
		{"a Deployment may ask to be", false, deploy, "true", true},
		{"another group's StatefulSet is not a StatefulSet", false, kruise, "", false},
		{"the annotation cannot unstick a sticky policy", true, sts, "false", true},
		{"nor for a Deployment", true, deploy, "false", true},
		{"an unknown value keeps the default", false, sts, "maybe", true},
	}
	if sticky(&v1alpha1.Placement{}, sts, nil) {
		t.Error("a duplicated StatefulSet is sticky; want only divided ones")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ann := map[string]string{}
			if c.annotation != "" {
				ann[v1alpha1.AnnotationSticky] = c.annotation
			}
			divide := &v1alpha1.Placement{Sticky: c.policy, ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}
			if got := sticky(divide, c.gk, ann); got != c.want {
				t.Errorf("sticky = %v, want %v", got, c.want)
			}
		})
	}
}

func TestNewUnitCronJob(t *testing.T) {
	cron := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "CronJob",
		"metadata": map[string]any{"name": "report", "namespace": "shop"}, "spec": map[string]any{"schedule": "* * * * *"}}}
	fo := &v1alpha1.FederatedObject{}
	divide := &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}
	if u := NewUnit(fo, cron, divide); u.Replicas == nil || *u.Replicas != 1 || !u.Divide() {
		t.Errorf("a divided CronJob: replicas %v, want one run to divide", u.Replicas)
	}
	if u := NewUnit(fo, cron, &v1alpha1.Placement{}); u.Replicas != nil {
		t.Errorf("a duplicated CronJob: replicas %v, want none (a copy everywhere)", *u.Replicas)
	}
}
