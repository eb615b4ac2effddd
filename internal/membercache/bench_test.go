package membercache

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchPods is the number of pods the memory and list benchmarks cache.
const benchPods = 100_000

// kwokPod is a pod as a member with kwok holds it (testdata/kwok-pod.json,
// taken from `flotilla up`: a Deployment's pod, Running, with its managed
// fields).
func kwokPod(tb testing.TB) *corev1.Pod {
	tb.Helper()
	raw, err := os.ReadFile("testdata/kwok-pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// syntheticPod is the i-th of many pods like base: its own name, uid, IP
// and resourceVersion; 100 pods per ReplicaSet, 10 ReplicaSets per
// namespace, 50 nodes.
func syntheticPod(base *corev1.Pod, i int) *corev1.Pod {
	p := base.DeepCopy()
	rs := fmt.Sprintf("app-%d-%08x", i/100, i/100*2654435761)
	p.Name = fmt.Sprintf("%s-%05x", rs, i*7919%1048576)
	p.GenerateName = rs + "-"
	p.Namespace = fmt.Sprintf("ns-%d", i/1000)
	p.UID = types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
	p.ResourceVersion = fmt.Sprint(1000 + i)
	p.Labels = map[string]string{"app": fmt.Sprintf("app-%d", i/100), "pod-template-hash": fmt.Sprintf("%08x", i/100*2654435761)}
	p.OwnerReferences[0].Name = rs
	p.OwnerReferences[0].UID = types.UID(fmt.Sprintf("rs-%08x", i/100))
	p.Spec.NodeName = fmt.Sprintf("node-%d", i%50)
	p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	p.Status.HostIP = fmt.Sprintf("192.168.0.%d", i%50)
	return p
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCacheMemory caches 100,000 pods and reports the live heap per
// pod (B/pod; the target is at most 2,048).
func BenchmarkCacheMemory(b *testing.B) {
	base := kwokPod(b)
	pods := make([]*corev1.Pod, benchPods)
	for i := range pods {
		pods[i] = syntheticPod(base, i)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before := heapInUse()
		ks, _ := ParseKinds([]string{"pods"})
		c := New(ks, Options{})
		b.StartTimer()
		for i, p := range pods {
			if err := c.Set(podsGR, fmt.Sprintf("member-%d", i%3), p.DeepCopy()); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := heapInUse()
		b.ReportMetric(float64(after-before)/benchPods, "B/pod")
		runtime.KeepAlive(c)
		b.StartTimer()
	}
}

// BenchmarkCacheList lists 100,000 cached pods and writes them out as the
// gateway does (no selector).
func BenchmarkCacheList(b *testing.B) {
	c := benchCache(b)
	b.ResetTimer()
	for range b.N {
		res, err := c.List(podsGR, ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var buf []byte
		for _, e := range res.Items {
			if buf, err = e.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
			k, _ := io.Discard.Write(buf)
			n += k
		}
		b.SetBytes(int64(n))
	}
}

// BenchmarkCacheListPages: all of benchPods pods over three members,
// listed the way kubectl and client-go's pager do, 500 at a time; one op
// is the whole walk (pages/op: how many requests it took).
func BenchmarkCacheListPages(b *testing.B) {
	c := benchCache(b)
	b.ResetTimer()
	for range b.N {
		o := ListOptions{Limit: 500}
		pages := 0
		for {
			res, err := c.List(podsGR, o)
			if err != nil {
				b.Fatal(err)
			}
			pages++
			if res.Continue == "" {
				break
			}
			o.Continue = res.Continue
		}
		b.ReportMetric(float64(pages), "pages/op")
	}
}

// BenchmarkWatchStartInANamespace: a watch of one namespace's pods (1,000 of
// benchPods) starting from now, as `kubectl get pods -w -n NS` does: the
// current objects it sends first are read from that namespace alone.
func BenchmarkWatchStartInANamespace(b *testing.B) {
	c := benchCache(b)
	b.ResetTimer()
	for range b.N {
		w, err := c.Watch(podsGR, WatchOptions{Filter: Filter{Namespace: "ns-7"}})
		if err != nil {
			b.Fatal(err)
		}
		if len(w.Backlog) == 0 {
			b.Fatal("no pods in namespace ns-7")
		}
		w.Stop()
	}
}

// benchCache returns a cache of benchPods synthetic pods over three
// members.
func benchCache(b *testing.B) *Cache {
	b.Helper()
	base := kwokPod(b)
	ks, _ := ParseKinds([]string{"pods"})
	c := New(ks, Options{})
	for i := range benchPods {
		if err := c.Set(podsGR, fmt.Sprintf("member-%d", i%3), syntheticPod(base, i)); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// BenchmarkWatchFanOut: 100 watchers of all pods, each draining its
// events, while the cache takes changes as fast as it can; reports the
// events delivered per second to all watchers together (the cache's
// side of the gateway's watch fan-in, without HTTP).
func BenchmarkWatchFanOut(b *testing.B) {
	base := kwokPod(b)
	ks, _ := ParseKinds([]string{"pods"})
	c := New(ks, Options{WatchBuffer: 100_000})
	const watchers, pods = 100, 1000
	objs := make([]*corev1.Pod, pods)
	for i := range objs {
		objs[i] = syntheticPod(base, i)
		if err := c.Set(podsGR, "member-1", objs[i].DeepCopy()); err != nil {
			b.Fatal(err)
		}
	}
	ws := make([]*Watcher, watchers)
	done := make(chan int, watchers)
	for i := range ws {
		w, err := c.Watch(podsGR, WatchOptions{RV: mustRVB(b, c)})
		if err != nil {
			b.Fatal(err)
		}
		ws[i] = w
		go func() {
			n := 0
			for range w.Events() {
				n++
			}
			done <- n
		}()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := objs[i%pods].DeepCopy()
		p.ResourceVersion = fmt.Sprint(1_000_000 + i)
		if err := c.Set(podsGR, "member-1", p); err != nil {
			b.Fatal(err)
		}
	}
	for _, w := range ws {
		w.Stop()
	}
	total := 0
	for range ws {
		total += <-done
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s-delivered")
}

func mustRVB(b *testing.B, c *Cache) string {
	rv, err := c.CurrentRV(podsGR)
	if err != nil {
		b.Fatal(err)
	}
	return rv
}
