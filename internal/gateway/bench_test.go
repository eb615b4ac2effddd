package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// BenchmarkPassThrough measures what the gateway adds to a request for a
// host kind: get, list (100 ConfigMaps) and server-side apply of a
// ConfigMap, directly against the host apiserver and through the gateway,
// as the same admin. It reports p50 and p99 per operation; the targets are
// a gateway/direct ratio of at most 1.2 (docs/benchmarks.md).
func BenchmarkPassThrough(b *testing.B) {
	if testing.Short() {
		b.Skip("starts an environment")
	}
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{HostOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	// The gateway watches MemberClusters (none here): without the CRDs
	// its watch would fail and retry all along.
	if err := crd.Install(ctx, env.Host.Config); err != nil {
		b.Fatal(err)
	}
	gwCfg := startGatewayFor(b, env)
	gwCfg.BearerToken = env.Host.Config.BearerToken
	gwCfg.QPS, gwCfg.Burst = -1, 0
	hostCfg := *env.Host.Config
	hostCfg.QPS, hostCfg.Burst = -1, 0
	clients := map[string]kubernetes.Interface{
		"direct":  kubernetes.NewForConfigOrDie(&hostCfg),
		"gateway": kubernetes.NewForConfigOrDie(gwCfg),
	}
	ns := env.Namespace(b)
	cms := env.Host.Client.CoreV1().ConfigMaps(ns)
	for i := range 100 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"k": "v"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	ops := map[string]func(kubernetes.Interface, int) error{
		"get": func(cs kubernetes.Interface, _ int) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-000", metav1.GetOptions{})
			return err
		},
		"list": func(cs kubernetes.Interface, _ int) error {
			_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		},
		"apply": func(cs kubernetes.Interface, i int) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"i": fmt.Sprint(i)}),
				metav1.ApplyOptions{FieldManager: "bench", Force: true})
			return err
		},
	}
	for _, op := range []string{"get", "list", "apply"} {
		for _, path := range []string{"direct", "gateway"} {
			b.Run(op+"/"+path, func(b *testing.B) {
				cs, do := clients[path], ops[op]
				if err := do(cs, 0); err != nil { // warm the connection
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if err := do(cs, i); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
