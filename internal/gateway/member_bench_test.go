package gateway_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/poll"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// benchMemberPods is how many pods BenchmarkMemberPods puts in member-1
// (FLOTILLA_BENCH_GATEWAY_PODS overrides it).
func benchMemberPods() int {
	if n, err := strconv.Atoi(os.Getenv("FLOTILLA_BENCH_GATEWAY_PODS")); err == nil && n > 0 {
		return n
	}
	return 10_000
}

// BenchmarkMemberPods measures the member cache behind a running gateway
// with two apiserver-only members, member-1 holding N pods (default
// 10,000):
//   - list/direct and list/gateway: a LIST of all N pods (JSON, the raw
//     body read to the end) from member-1's apiserver and through the
//     gateway (served from memory), p50 and p99;
//   - watch-fan-in: 100 watches of all pods through the gateway while
//     1,000 pods change in member-1; events delivered per second.
func BenchmarkMemberPods(b *testing.B) {
	if testing.Short() {
		b.Skip("starts an environment")
	}
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{Members: 2, APIServerOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	if err := crd.Install(ctx, env.Host.Config); err != nil {
		b.Fatal(err)
	}
	for i, name := range []string{"one", "two"} {
		if err := join.Join(ctx, join.Options{Name: name, Host: env.Host.Config, Member: env.Members[i].Config}); err != nil {
			b.Fatal(err)
		}
	}
	n := benchMemberPods()
	member := env.Members[0].Config
	member.QPS, member.Burst = -1, 0
	direct := kubernetes.NewForConfigOrDie(member)
	ns := "bench"
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := direct.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	createPods(b, direct, ns, n)
	gwCfg := startGatewayFor(b, env)
	gwCfg.BearerToken = env.Host.Config.BearerToken
	gwCfg.QPS, gwCfg.Burst = -1, 0
	gw := kubernetes.NewForConfigOrDie(gwCfg)
	if err := waitForPods(ctx, gw, n); err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"direct", "gateway"} {
		cs := map[string]kubernetes.Interface{"direct": direct, "gateway": gw}[path]
		b.Run("list/"+path, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			size := 0
			for i := 0; i < b.N; i++ {
				start := time.Now()
				raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", "application/json").DoRaw(ctx)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				size = len(raw)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
			b.ReportMetric(float64(size)/float64(n), "B/pod-served")
		})
	}
	b.Run("watch-fan-in", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			watchFanIn(b, gw, direct, ns, 100, 1000)
		}
	})
}

func createPods(b *testing.B, cs kubernetes.Interface, ns string, n int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i/100)}},
					Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%50), AutomountServiceAccountToken: ptr.To(false),
						Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}},
				}
				if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func waitForPods(ctx context.Context, gw kubernetes.Interface, n int) error {
	return poll.Until(ctx, 5*time.Minute, func(ctx context.Context) error {
		l, err := gw.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if l.RemainingItemCount == nil || int(*l.RemainingItemCount)+1 < n {
			return fmt.Errorf("the gateway caches fewer than %d pods", n)
		}
		return nil
	})
}

// watchFanIn opens watchers watches of all pods through the gateway,
// changes changes pods in the member, and reports the events per second
// delivered to all watchers together.
func watchFanIn(b *testing.B, gw, member kubernetes.Interface, ns string, watchers, changes int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := gw.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	var wg sync.WaitGroup
	ws := make([]watch.Interface, watchers)
	for i := range ws {
		if ws[i], err = gw.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion}); err != nil {
			b.Fatal(err)
		}
	}
	want := int64(watchers * changes)
	done := make(chan struct{})
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified && got.Add(1) == want {
					close(done)
				}
			}
		}()
	}
	start := time.Now()
	// Each round writes a new value, so that every patch is a change.
	round := start.UnixNano()
	var next atomic.Int64
	var pw sync.WaitGroup
	for range 8 {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= changes {
					return
				}
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"round":"%d"}}}`, round)
				if _, err := member.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("pod-%06d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	pw.Wait()
	produced := time.Since(start)
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("watchers got %d of %d events", got.Load(), want)
	}
	elapsed := time.Since(start)
	for _, w := range ws {
		w.Stop()
	}
	wg.Wait()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "events/s-delivered")
	b.ReportMetric(float64(changes)/produced.Seconds(), "changes/s-in-member")
}
