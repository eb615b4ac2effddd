package replicas

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// BenchmarkReplicas plans a Divide object with equal static weights over
// 100 and 1,000 chosen clusters, scaling up from a current placement on
// nine in ten of them (avoidDisruption on).
func BenchmarkReplicas(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			chosen := make([]framework.ScoredCluster, n)
			var cur []v1alpha1.ClusterPlacement
			for i := range chosen {
				c := &v1alpha1.MemberCluster{}
				c.Name = fmt.Sprint("member-", i)
				chosen[i] = framework.ScoredCluster{Cluster: c, Score: int64(n - i)}
				if i%10 != 0 {
					cur = append(cur, v1alpha1.ClusterPlacement{Cluster: c.Name, Replicas: ptr.To(int32(3 + i%5))})
				}
			}
			u := &framework.Unit{Key: "ns/web", Replicas: ptr.To(int32(6 * n)), Current: cur, Placement: &v1alpha1.Placement{
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}
			p, err := New(nil)
			if err != nil {
				b.Fatal(err)
			}
			rp := p.(framework.ReplicasPlugin)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, st := rp.Replicas(ctx, nil, u, chosen); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}
