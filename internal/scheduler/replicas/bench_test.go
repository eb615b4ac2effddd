package replicas

import (
	"fmt"
	"testing"
)

// BenchmarkSplit divides 1,000 replicas by water-level weights over 100 and
// 1,000 clusters, with a maximum on every tenth cluster.
func BenchmarkSplit(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			caps := make([]Capacity, n)
			for i := range caps {
				caps[i] = Capacity{Total: float64(100 + i%7*50), Available: float64(10 + i%13*20)}
			}
			targets := make([]Target, n)
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprint("member-", i)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := WaterLevel(caps, 0)
				for i := range targets {
					targets[i] = Target{Name: names[i], Weight: w[i], Max: NoMax}
					if i%10 == 0 {
						targets[i].Max = 2
					}
				}
				_ = Split(1000, targets, "ns/web")
			}
		})
	}
}
