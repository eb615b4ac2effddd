package plugins_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// benchResources is what a member typically serves: 40 resources, sorted
// by group, version and resource, apps/v1 Deployment among them.
var benchResources = func() []v1alpha1.APIResource {
	kinds := map[string][]string{
		"v1": {"ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node", "PersistentVolume",
			"PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController", "ResourceQuota", "Secret", "Service", "ServiceAccount"},
		"apps/v1":                         {"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"},
		"autoscaling/v2":                  {"HorizontalPodAutoscaler"},
		"batch/v1":                        {"CronJob", "Job"},
		"networking.k8s.io/v1":            {"Ingress", "IngressClass", "NetworkPolicy"},
		"policy/v1":                       {"PodDisruptionBudget"},
		"rbac.authorization.k8s.io/v1":    {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"},
		"storage.k8s.io/v1":               {"CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"},
		"coordination.k8s.io/v1":          {"Lease"},
		"discovery.k8s.io/v1":             {"EndpointSlice"},
		"admissionregistration.k8s.io/v1": {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"},
		"apiextensions.k8s.io/v1":         {"CustomResourceDefinition"},
	}
	var out []v1alpha1.APIResource
	for gv, ks := range kinds {
		group, version, found := strings.Cut(gv, "/")
		if !found {
			group, version = "", gv
		}
		for _, k := range ks {
			out = append(out, v1alpha1.APIResource{Group: group, Version: version, Kind: k, Resource: strings.ToLower(k) + "s", Scope: v1alpha1.ScopeNamespaced})
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.APIResource) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Resource, b.Group+"/"+b.Version+"/"+b.Resource)
	})
	return out
}()

// benchClusters returns n Ready clusters over 4 regions of 3 zones, each
// with its own copy of benchResources, 32 to 256 cores and 4 GiB a core,
// 10 to 90% free; one in 20 has a PreferNoSchedule taint.
func benchClusters(n int) []*v1alpha1.MemberCluster {
	regions := []string{"eu-west-1", "eu-central-1", "us-east-1", "ap-southeast-1"}
	out := make([]*v1alpha1.MemberCluster, n)
	for i := range out {
		region := regions[i%len(regions)]
		c := &v1alpha1.MemberCluster{}
		c.Name = fmt.Sprintf("member-%04d", i)
		c.Labels = map[string]string{
			"topology.kubernetes.io/region": region,
			"topology.kubernetes.io/zone":   fmt.Sprintf("%s%c", region, 'a'+i/len(regions)%3),
			"flotilla.io/provider":          []string{"aws", "gcp"}[i%2],
			"environment":                   "production",
		}
		if i%20 == 0 {
			c.Spec.Taints = []corev1.Taint{{Key: "example.com/maintenance", Effect: corev1.TaintEffectPreferNoSchedule}}
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"}}
		c.Status.APIResources = slices.Clone(benchResources)
		cores := int64(32 << (i % 4))
		pct := int64(10 + i*37%81)
		c.Status.Resources.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cores, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cores<<32, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(cores*8, resource.DecimalSI),
		}
		c.Status.Resources.Available = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cores*pct*10, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cores<<32/100*pct, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(cores*8*pct/100, resource.DecimalSI),
		}
		out[i] = c
	}
	return out
}

// BenchmarkScheduleDefaultProfile times one default-profile decision for a
// Divide Deployment (equal static weights, avoidDisruption on) that ran 1
// replica on every other cluster, so each decision scales it from half the
// cluster count to its replicas.
func BenchmarkScheduleDefaultProfile(b *testing.B) {
	for _, bc := range []struct{ clusters, replicas int }{{100, 100}, {1000, 100}, {1000, 1000}} {
		b.Run(fmt.Sprintf("clusters=%d/replicas=%d", bc.clusters, bc.replicas), func(b *testing.B) {
			clusters := benchClusters(bc.clusters)
			var current []v1alpha1.ClusterPlacement
			for i := 0; i < len(clusters); i += 2 {
				current = append(current, v1alpha1.ClusterPlacement{Cluster: clusters[i].Name, Replicas: ptr.To[int32](1)})
			}
			u := &framework.Unit{Key: "shop/web", GVK: deployment, Namespace: "shop", Name: "web",
				Replicas: ptr.To(int32(bc.replicas)), Current: current,
				Requests:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}
			p := defaultProfile(b)
			ctx := context.Background()
			res, err := p.Schedule(ctx, u, clusters)
			if err != nil {
				b.Fatal(err)
			}
			var sum int32
			for _, pl := range res.Placement {
				sum += *pl.Replicas
			}
			if sum != int32(bc.replicas) || res.Feasible != bc.clusters {
				b.Fatalf("placement sums to %d on %d of %d feasible clusters: %s", sum, len(res.Placement), res.Feasible, res.Message)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Schedule(ctx, u, clusters); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
