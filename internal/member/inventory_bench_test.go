package member

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// realisticPod is a pod as a member's apiserver returns it: labels,
// annotations, managed fields, two containers with env and mounts, status.
func realisticPod(i int) *corev1.Pod {
	container := func(name string) corev1.Container {
		c := corev1.Container{
			Name: name, Image: "registry.example.com/team/app:v1.2.3",
			Command: []string{"/app", "--config=/etc/app/config.yaml", "--port=8080"},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "token", MountPath: "/var/run/secrets"}},
		}
		for j := range 10 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: "some-value-of-moderate-length"})
		}
		return c
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("app-7d9f8b6c5-%05d", i), Namespace: "team-a", UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "12345",
			Labels:          map[string]string{"app": "app", "pod-template-hash": "7d9f8b6c5", "team": "a", "tier": "backend"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-21T10:00:00Z", "prometheus.io/scrape": "true"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: make([]byte, 1500)}}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-7d9f8b6c5", UID: "rs-uid"}},
		},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("node-%d", i%100),
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "config"}, {Name: "token"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.168.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example.com/team/app:v1.2.3"}, {Name: "sidecar", Ready: true}},
		},
	}
}

// heapPerPod measures the live heap retained by keeping n pods as produced
// by keep (the informer's store holds what the transform returns).
func heapPerPod(n int, keep func(*corev1.Pod) any) float64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	store := make([]any, n)
	for i := range n {
		store[i] = keep(realisticPod(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(store)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkPodCacheMemory reports the bytes a cached pod costs, trimmed as
// the inventory keeps it and untrimmed, plus the capacity bookkeeping.
func BenchmarkPodCacheMemory(b *testing.B) {
	const n = 10000
	for b.Loop() {
		full := heapPerPod(n, func(p *corev1.Pod) any { return p })
		trimmed := heapPerPod(n, func(p *corev1.Pod) any { t, _ := trimPod(p); return t })
		b.ReportMetric(full, "B/pod-full")
		b.ReportMetric(trimmed, "B/pod-trimmed")
	}
}

// BenchmarkCapacityUpdate measures one pod event (update) against totals
// for 100 nodes and 10,000 pods, and one summary.
func BenchmarkCapacityUpdate(b *testing.B) {
	c := NewCapacity()
	for i := range 100 {
		c.SetNode(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	pods := make([]*corev1.Pod, 10000)
	for i := range pods {
		pods[i] = realisticPod(i)
		c.SetPod(pods[i].Namespace+"/"+pods[i].Name, pods[i])
	}
	cached := make([]*cachedPod, len(pods))
	for i, p := range pods {
		t, _ := trimPod(p)
		cached[i] = t.(*cachedPod)
	}
	b.Run("pod-event", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p := cached[i%len(cached)]
			c.DeletePod(p.Namespace + "/" + p.Name)
			c.setUsage(p.Namespace+"/"+p.Name, p.NodeName, p.Workload, p.Phase, p.Requests)
			i++
		}
	})
	b.Run("summary", func(b *testing.B) {
		for b.Loop() {
			_ = c.Summary()
		}
	})
}
