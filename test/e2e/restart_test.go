package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// restartWorkloads is how many workloads the restart test federates: 200,
// or FLOTILLA_E2E_RESTART_WORKLOADS (docs/benchmarks.md measures 500; in
// `make test` the other packages share the two cores, and 500 took over
// three minutes of them).
func restartWorkloads(t *testing.T) int {
	t.Helper()
	v := os.Getenv("FLOTILLA_E2E_RESTART_WORKLOADS")
	if v == "" {
		return 200
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("FLOTILLA_E2E_RESTART_WORKLOADS=%q: want a positive number", v)
	}
	return n
}

// restartWritesNothing federates n Deployments to every member, waits for
// steady state, restarts the controller-manager and checks from the
// members' own apiserver metrics that it wrote nothing to them.
func restartWritesNothing(t *testing.T, f *fed, n int) {
	ns := f.namespace(t, "restart")
	f.create(t, namespacedPolicy(ns, "all", nil))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f.host.Create(context.Background(), deployment(ns, fmt.Sprintf("app-%03d", i), 0, "")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Minute, fmt.Sprintf("%d workloads propagated to %d members and their host status settled", n, len(members)), func(ctx context.Context) error {
		fos := &v1alpha1.FederatedObjectList{}
		if err := f.host.List(ctx, fos, client.InNamespace(ns)); err != nil {
			return err
		}
		done := 0
		for i := range fos.Items {
			if propagated(&fos.Items[i]) && len(fos.Items[i].Status.Clusters) == len(members) {
				done++
			}
		}
		if done < n {
			return fmt.Errorf("%d/%d FederatedObjects propagated", done, n)
		}
		deps := &appsv1.DeploymentList{}
		if err := f.host.List(ctx, deps, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, d := range deps.Items {
			if d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("%s: status observedGeneration %d, generation %d", d.Name, d.Status.ObservedGeneration, d.Generation)
			}
		}
		return nil
	})
	t.Logf("%d Deployments propagated to %d members (%d copies) with host status in %s", n, len(members), n*len(members), time.Since(start).Round(100*time.Millisecond))

	// Steady state: the members' write counters stop moving.
	var before map[string]int
	testenv.Eventually(t, 60*time.Second, "member write counters steady for 5 s", func(ctx context.Context) error {
		first := f.memberWrites(t)
		steady := time.Now().Add(5 * time.Second)
		for time.Now().Before(steady) {
			if now := f.memberWrites(t); fmt.Sprint(now) != fmt.Sprint(first) {
				return fmt.Errorf("writes moving: %v -> %v", first, now)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
		before = first
		return nil
	})

	cm := f.component(t, localenv.HostName, localenv.ControllerManager)
	if err := syscall.Kill(cm.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	if r := flotilla(t, "up", "--state-dir", f.dir); r.err != nil {
		t.Fatalf("up: %v\n%s", r.err, r.stderr)
	}
	cm = f.component(t, localenv.HostName, localenv.ControllerManager)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", cm.Ports[0])
	testenv.Eventually(t, 3*time.Minute, "restarted controller-manager re-examined every workload", func(ctx context.Context) error {
		m := httpGet(t, metricsURL)
		for _, c := range []string{"propagate", "status"} {
			if got := controllerReconciles(m, c); got < n {
				return fmt.Errorf("%s: %d reconciles", c, got)
			}
			if d := workqueueDepth(m, c); d != 0 {
				return fmt.Errorf("%s: queue depth %d", c, d)
			}
		}
		return nil
	})
	t.Logf("restarted controller-manager re-examined %d workloads in %s", n, time.Since(restart).Round(100*time.Millisecond))
	testenv.Consistently(t, 10*time.Second, func() error {
		if after := f.memberWrites(t); fmt.Sprint(after) != fmt.Sprint(before) {
			return fmt.Errorf("member writes after the restart: before %v, after %v", before, after)
		}
		return nil
	})
	t.Logf("member writes to federated kinds unchanged across the restart: %v", before)
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cm.PID)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				t.Logf("controller-manager with %d federated workloads (%d member copies): %s", n, n*len(members), strings.Join(strings.Fields(line), " "))
			}
		}
	}
}

// federatedResources are the resources whose writes memberWrites counts.
var federatedResources = map[string]bool{"deployments": true, "namespaces": true, "configmaps": true, "services": true}

// memberWrites reads each member's apiserver_request_total and sums the
// create, update, patch, apply and delete requests to the federated
// resources (not to their status).
func (f *fed) memberWrites(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range members {
		b, err := f.typed[m].CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			t.Fatalf("metrics of %s: %v", m, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "apiserver_request_total{") {
				continue
			}
			labels := promLabels(line)
			switch labels["verb"] {
			case "POST", "PUT", "PATCH", "APPLY", "DELETE":
			default:
				continue
			}
			if !federatedResources[labels["resource"]] || labels["subresource"] != "" {
				continue
			}
			var v float64
			fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
			out[m] += int(v)
		}
	}
	return out
}

// promLabels parses the labels of one exposition line.
func promLabels(line string) map[string]string {
	out := map[string]string{}
	open, end := strings.Index(line, "{"), strings.LastIndex(line, "}")
	if open < 0 || end < open {
		return out
	}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// workqueueDepth is a controller's work queue depth (all priorities) in an
// exposition, -1 when absent.
func workqueueDepth(metrics, controller string) int {
	prefix := fmt.Sprintf(`workqueue_depth{controller="%s",`, controller)
	depth, found := 0, false
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
			depth += int(v)
			found = true
		}
	}
	if !found {
		return -1
	}
	return depth
}
