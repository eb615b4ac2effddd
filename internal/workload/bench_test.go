package workload

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkInterpretation compares what reading an object costs through
// the built-in Go knowledge (a Deployment) and through a compiled
// WorkloadInterpreter (the shipped CloneSet one): replicas (every
// scheduling decision and render), followers (every template change),
// ready replicas (graceful eviction, CEL) and the host status from three
// members (every member status change; CEL only for the revision fields).
// Reported per operation with allocations (docs/benchmarks.md).
func BenchmarkInterpretation(b *testing.B) {
	deployment := deploymentTemplate(b, 2, rolledOut(9))
	deployment.Object["spec"] = map[string]any{"replicas": int64(9), "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "c", "image": "nginx"}},
		"volumes":    []any{map[string]any{"name": "v", "configMap": map[string]any{"name": "settings"}}},
	}}}
	deploymentMembers := []Member{
		{Cluster: "member-1", Current: true, Object: deploymentCopy(b, rolledOut(3))},
		{Cluster: "member-2", Current: true, Object: deploymentCopy(b, unavailable(3, 2))},
		{Cluster: "member-3", Current: true, Object: deploymentCopy(b, rolledOut(3))},
	}
	cloneSetCopy := func(ready int64) *unstructured.Unstructured {
		o := unstructuredYAMLB(b, cloneSetYAML)
		o.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "readyReplicas": ready,
			"availableReplicas": ready, "updatedReplicas": int64(3), "updatedReadyReplicas": ready,
			"updateRevision": "web-b", "currentRevision": "web-b", "labelSelector": "app=web"}
		return o
	}
	withCloneSetInterpreterB(b)
	cloneSet := unstructuredYAMLB(b, cloneSetYAML)
	cloneSetMembers := []Member{
		{Cluster: "member-1", Current: true, Object: cloneSetCopy(3)},
		{Cluster: "member-2", Current: true, Object: cloneSetCopy(2)},
		{Cluster: "member-3", Current: true, Object: cloneSetCopy(3)},
	}
	now := metav1.Now()
	for _, c := range []struct {
		name     string
		obj      *unstructured.Unstructured
		members  []Member
		template *unstructured.Unstructured
	}{
		{"go-deployment", deployment, deploymentMembers, deployment},
		{"cel-cloneset", cloneSet, cloneSetMembers, cloneSet},
	} {
		b.Run("replicas/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Replicas(c.obj); !ok {
					b.Fatal("no replicas")
				}
			}
		})
		b.Run("followers/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Followers(c.obj)
			}
		})
		b.Run("ready-replicas/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ReadyReplicas(c.members[1].Object); !ok {
					b.Fatal("not known")
				}
			}
		})
		b.Run("status-of-3/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AggregateStatus(c.template, c.members, now)
			}
		})
	}
}
