package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"one value", []float64{7}, 99, 7},
		{"median of ten is the 5th", ten, 50, 5},
		{"p95 of ten is the 10th", ten, 95, 10},
		{"p90 of ten is the 9th", ten, 90, 9},
		{"p100 is the max", ten, 100, 10},
		{"tiny p is the min", ten, 0.1, 1},
		{"p99 of 1000 is the 990th", seq(1000), 99, 990},
		{"p50 of two is the lower", []float64{1, 2}, 50, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

func TestSummarize(t *testing.T) {
	if got := summarize(nil); got != (summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
	// Unsorted input, in milliseconds 100..1 reversed.
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarize(ds)
	want := summary{Count: 100, Min: 0.001, Mean: 0.0505, P50: 0.050, P95: 0.095, P99: 0.099, Max: 0.100}
	if got.Count != want.Count || !near(got.Min, want.Min) || !near(got.Mean, want.Mean) || !near(got.P50, want.P50) ||
		!near(got.P95, want.P95) || !near(got.P99, want.P99) || !near(got.Max, want.Max) {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("summarize reordered its input")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestRate(t *testing.T) {
	if got := rate(300, 2*time.Second); got != 150 {
		t.Errorf("rate = %v, want 150", got)
	}
	if got := rate(300, 0); got != 0 {
		t.Errorf("rate over 0 = %v, want 0", got)
	}
}

func TestParseExpositionAndSum(t *testing.T) {
	text := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 1500
apiserver_request_total{code="200",component="apiserver",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 2.5e+01
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 9
weird{msg="a \"quoted\", comma"} 3 1700000000000
workqueue_depth{controller="propagate",name="propagate",priority=""} 0
no_labels 42
broken{x="1"
`
	samples := parseExposition(text)
	if len(samples) != 7 {
		t.Fatalf("parsed %d samples, want 7: %+v", len(samples), samples)
	}
	writes, ok := sum(samples, "apiserver_request_total", func(l map[string]string) bool {
		return writeVerbs[l["verb"]] && writeResources[l["resource"]] && l["subresource"] == ""
	})
	if !ok || writes != 1525 {
		t.Errorf("writes = %v (found %v), want 1525", writes, ok)
	}
	if v, _ := sum(samples, "weird", func(l map[string]string) bool { return l["msg"] == `a "quoted", comma` }); v != 3 {
		t.Errorf("escaped label value not parsed: %v", v)
	}
	if v, ok := sum(samples, "no_labels", nil); !ok || v != 42 {
		t.Errorf("no_labels = %v, %v", v, ok)
	}
	if _, ok := sum(samples, "absent", nil); ok {
		t.Error("absent metric found")
	}
}

func TestEffectiveCMSettings(t *testing.T) {
	got := effectiveCMSettings([]string{"controller-manager", "--kubeconfig=/k", "--concurrent-syncs=3", "--member-api-qps", "50", "--leader-elect=false"})
	if got.ConcurrentSyncs != 3 || got.MemberQPS != 50 || got.LeaderElect {
		t.Errorf("flags not applied: %+v", got)
	}
	if got.ConcurrentPropagationSyncs != 16 || got.HostQPS != 1000 {
		t.Errorf("defaults not kept: %+v", got)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"--workloads", "100", "--skip", "ceiling, restart"}); err != nil {
		t.Errorf("valid flags: %v", err)
	}
	for _, args := range [][]string{
		{"--workloads", "0"}, {"--members", "0"}, {"--skip", "nope"}, {"--member-mode", "kind"}, {"--workers", "0"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.0123, "s", "12 ms"}, {2.345, "s", "2.35 s"}, {1234.4, "obj/s", "1234 obj/s"},
		{3 << 20, "B", "3.0 MiB"}, {512, "B", "512 B"}, {0.456, "ratio", "0.46"}, {0, "count", "0"},
	} {
		if got := formatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

func TestLoadFromAndSince(t *testing.T) {
	exposition := func(propagateOK, propagateErr, cluster int, seconds float64, depth int) []sample {
		return parseExposition(fmt.Sprintf(`workqueue_depth{controller="propagate",name="propagate",priority=""} %d
workqueue_depth{controller="cluster",name="cluster",priority=""} 5
controller_runtime_active_workers{controller="propagate"} 0
controller_runtime_active_workers{controller="cluster"} 1
controller_runtime_reconcile_total{controller="propagate",result="success"} %d
controller_runtime_reconcile_total{controller="propagate",result="error"} %d
controller_runtime_reconcile_total{controller="cluster",result="success"} %d
controller_runtime_reconcile_time_seconds_sum{controller="propagate"} %g
`, depth, propagateOK, propagateErr, cluster, seconds))
	}
	before, err := loadFrom(exposition(10, 1, 4, 0.5, 0), "test")
	if err != nil {
		t.Fatal(err)
	}
	if !before.idle() {
		t.Errorf("busy cluster controller made the load busy: %+v", before)
	}
	if got := before.reconciles("propagate"); got != 11 {
		t.Errorf("propagate reconciles = %d, want 11", got)
	}
	after, err := loadFrom(exposition(30, 1, 9, 2.5, 2), "test")
	if err != nil {
		t.Fatal(err)
	}
	if after.idle() {
		t.Error("queue depth 2 counted as idle")
	}
	d := after.since(before)
	if p := d["propagate"]; p.total() != 20 || p.Reconciles["success"] != 20 || p.Reconciles["error"] != 0 || !near(p.Seconds, 2) {
		t.Errorf("propagate delta = %+v", p)
	}
	if c := d["cluster"]; c.total() != 5 {
		t.Errorf("cluster delta = %+v", c)
	}
	if _, err := loadFrom(parseExposition("go_goroutines 12\n"), "test"); err == nil {
		t.Error("metrics without work queues accepted")
	}
}

func TestPrintTable(t *testing.T) {
	r := &report{Settings: settings{Workloads: 10, Members: 2, MemberMode: "apiserver-only"}}
	ok := r.run("create", "create burst", "", func(s *scenario) error {
		s.add("workload latency p50", 0.25, "s", "")
		s.add("member writes", 0, "count", "= 0")
		s.check(true)
		s.note("a note")
		return nil
	})
	if !ok {
		t.Fatal("scenario reported failure")
	}
	r.run("status", "status latency", "no status here", func(*scenario) error { t.Error("skipped scenario ran"); return nil })
	r.run("restart", "restart", "", func(s *scenario) error {
		s.add("member writes during restart", 3, "count", "= 0")
		s.check(false)
		return nil
	})
	r.finish()
	if r.Passed {
		t.Error("missed target passed")
	}
	goals := newReport(options{workloads: 10, members: 2})
	goals.run("memory", "memory", "", func(s *scenario) error {
		s.add("RSS per workload", 80, "KiB", "< 50 KiB")
		s.goal(false)
		return nil
	})
	goals.finish()
	if !goals.Passed {
		t.Error("a missed performance goal failed the run")
	}
	var goalOut strings.Builder
	goals.printTable(&goalOut)
	if !strings.Contains(goalOut.String(), "< 50 KiB  MISSED") || !strings.Contains(goalOut.String(), "1 performance goal(s) MISSED") {
		t.Errorf("missed goal not reported:\n%s", goalOut.String())
	}
	var out strings.Builder
	r.printTable(&out)
	for _, want := range []string{"create    workload latency p50", "250 ms", "status    (skipped)", "= 0  MISSED",
		"status: skipped: no status here", "create: a note", "missed a required value"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestObservePods(t *testing.T) {
	pod := func(app string, ready corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.Labels = "wl-00001-abc", benchNamespace, map[string]string{appLabel: app, "pod-template-hash": "abc"}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}}
		}
		return p
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		want   observation
		wantOK bool
	}{
		{name: "ready", pod: pod("wl-00001", corev1.ConditionTrue), want: observation{cluster: "member-1", kind: kindPod, name: "wl-00001", ready: true}, wantOK: true},
		{name: "not ready", pod: pod("wl-00001", corev1.ConditionFalse), want: observation{cluster: "member-1", kind: kindPod, name: "wl-00001"}, wantOK: true},
		{name: "no conditions yet", pod: pod("wl-00001", ""), want: observation{cluster: "member-1", kind: kindPod, name: "wl-00001"}, wantOK: true},
		{name: "not a workload's pod", pod: pod("", corev1.ConditionTrue), want: observation{cluster: "member-1", kind: kindPod, ready: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trimmed, err := trim(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := observe("member-1", trimmed)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("observe(trim(pod)) = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
			if isCopy(got) {
				t.Errorf("a member pod counted as a member copy")
			}
		})
	}
	if !isCopy(observation{cluster: "member-1", kind: kindDeployment}) || isCopy(observation{cluster: localenv.HostName, kind: kindDeployment}) {
		t.Errorf("isCopy: a member Deployment is a copy, the host's is not")
	}
}

func TestWritesSince(t *testing.T) {
	before := map[string]int{"PUT federatedobjects/status": 10, "PATCH deployments/status": 4}
	after := map[string]int{"PUT federatedobjects/status": 12, "PATCH deployments/status": 4, "APPLY namespaces": 1}
	got, total := writesSince(before, after)
	want := map[string]int{"PUT federatedobjects/status": 2, "APPLY namespaces": 1}
	if total != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writesSince = %v, %d; want %v, 3", got, total, want)
	}
}

func TestStatusChanges(t *testing.T) {
	before := map[string]string{"a": `{"replicas":1}`, "b": `{"replicas":2}`, "c": `{}`}
	after := map[string]string{"a": `{"replicas":1}`, "b": `{"replicas":3}`, "c": `{"x":1}`}
	n, examples := statusChanges(before, after, 1)
	if n != 2 || len(examples) != 1 || !strings.HasPrefix(examples[0], "b: before") {
		t.Errorf("statusChanges = %d, %q; want 2 with one example for b", n, examples)
	}
}
