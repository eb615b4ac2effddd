package plugins_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins"
)

// capacities are members' node tables, as push sessions keep them.
type capacities struct {
	mu sync.Mutex
	m  map[string]*member.Capacity
}

func (c *capacities) EstimateNodes(cluster string, f func(member.Nodes)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	capacity, ok := c.m[cluster]
	if ok {
		f(capacity)
	}
	return ok
}

// benchNodes fills a member with nodes of 4 to 64 cores (4 GiB a core,
// 110 pods), a tenth of them tainted NoSchedule, each running pods that
// take 10 to 90% of it, in the same proportions for every member.
func benchNodes(nodes int) *member.Capacity {
	c := member.NewCapacity()
	for i := range nodes {
		cores := int64(4 << (i % 5))
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{
				"kubernetes.io/hostname": fmt.Sprintf("node-%05d", i), "topology.kubernetes.io/zone": fmt.Sprintf("z%d", i%3)}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewQuantity(cores, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(cores<<32, resource.BinarySI),
					corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
				},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
		if i%10 == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
		}
		c.SetNode(n)
		used := cores * int64(10+i*37%81) * 10 // millicores
		c.SetPod(fmt.Sprintf("other/p-%d", i), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: fmt.Sprintf("p-%d", i)},
			Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(used, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(used<<22, resource.BinarySI)}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return c
}

// inFlight is how many workloads' reservations are outstanding at once in
// BenchmarkScheduleSimulated: decisions cycle over that many workloads,
// each replacing its own reservation (their pods never start here).
const inFlight = 20

// BenchmarkScheduleSimulated times one decision with simulated scheduling:
// the members' room estimated from their nodes (Fill), the ResourceFit
// filter and WaterLevel replicas on it, and the ledger's reservation. With
// churn, one pod changes in every member between decisions, so no
// member's cached estimate can be reused (the worst case); without, the
// estimates come from the caches.
func BenchmarkScheduleSimulated(b *testing.B) {
	for _, bc := range []struct {
		clusters, nodes int
		churn           bool
	}{{100, 1000, false}, {100, 1000, true}, {1000, 1000, false}, {1000, 100, true}} {
		b.Run(fmt.Sprintf("clusters=%d/nodes=%d/churn=%t", bc.clusters, bc.nodes, bc.churn), func(b *testing.B) {
			clusters := benchClusters(bc.clusters)
			members := &capacities{m: map[string]*member.Capacity{}}
			template := benchNodes(bc.nodes)
			for _, c := range clusters {
				if c.Name == clusters[0].Name {
					members.m[c.Name] = template
					continue
				}
				members.m[c.Name] = benchNodes(bc.nodes)
			}
			e := &estimate.Estimator{Members: members, Ledger: &ledger.Ledger{}}
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}}
			p, err := framework.Build("simulated", &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
				Filter: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "ResourceFit"}}},
			}}, plugins.Registry(), plugins.Defaults(), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			decide := func(i int) *framework.Result {
				u := &framework.Unit{Key: "shop/web", GVK: deployment, Namespace: "shop", Name: fmt.Sprintf("web-%d", i%inFlight),
					Replicas: ptr.To[int32](100), Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
					Shape: nodefit.NewShape(spec),
					Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{
						Type: v1alpha1.ReplicaSchedulingDivide, WeightMode: v1alpha1.WeightWaterLevel}}}
				e.Lock()
				defer e.Unlock()
				e.Fill(u, clusters)
				res, err := p.Schedule(ctx, u, clusters)
				if err != nil {
					b.Fatal(err)
				}
				e.Reserve(u, res.Placement, false)
				return res
			}
			res := decide(0)
			var sum int32
			for _, pl := range res.Placement {
				sum += *pl.Replicas
			}
			if sum != 100 || res.Feasible == 0 {
				b.Fatalf("placement sums to %d on %d feasible clusters: %s", sum, res.Feasible, res.Message)
			}
			churn := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "churn"},
				Spec:   corev1.PodSpec{NodeName: "node-00001", Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if bc.churn {
					for _, c := range members.m {
						if i%2 == 0 {
							c.SetPod("other/churn", churn)
						} else {
							c.DeletePod("other/churn")
						}
					}
				}
				decide(i)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
