package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// ceiling creates the same member objects as the create burst directly in
// the members, one client and --workers goroutines per member, and
// compares the throughput with the propagation's.
func (b *bench) ceiling(ctx context.Context, s *scenario, cr *createResult) error {
	n, m := b.opts.workloads, len(b.members)
	for _, mc := range b.members {
		if _, err := mc.cs.CoreV1().Namespaces().Create(ctx, namespace(ceilingNamespace), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace in %s: %w", mc.name, err)
		}
	}
	logf("ceiling: %d Deployments + %d ConfigMaps directly in each of %d members", n, n, m)
	begin := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, mc := range b.members {
		g.Go(func() error {
			return forEach(gctx, n, b.opts.workers, func(ctx context.Context, i int) error {
				if _, err := mc.cs.CoreV1().ConfigMaps(ceilingNamespace).Create(ctx, configMap(ceilingNamespace, i), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("%s: create ConfigMap %d: %w", mc.name, i, err)
				}
				// No replicas: the ceiling measures writes, not pods.
				if _, err := mc.cs.AppsV1().Deployments(ceilingNamespace).Create(ctx, deployment(ceilingNamespace, i, 0), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("%s: create Deployment %d: %w", mc.name, i, err)
				}
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	elapsed := time.Since(begin)
	ceil := rate(2*n*m, elapsed)
	s.add("member objects written", float64(2*n*m), "count", "")
	s.add("elapsed", elapsed.Seconds(), "s", "")
	s.add("ceiling throughput", ceil, "obj/s", "")
	if cr != nil {
		s.add("propagation / ceiling", cr.rate/ceil, "ratio", ">= 0.7")
		s.goal(cr.rate/ceil >= 0.7)
		ideal := 1.5 * float64(n*m) / ceil
		s.add("create burst p99 goal (1.5 × N·M / ceiling)", ideal, "s", fmt.Sprintf("create p99 %.2f s", cr.p99))
		s.goal(cr.p99 <= ideal)
	}
	s.note("plain creates, one client (QPS %g, burst %d) and %d goroutines per member", b.opts.clientQPS, b.opts.clientBurst, b.opts.workers)
	return nil
}

// imagePatch sets the first container's image.
var imagePatch = []byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"` + imageV2 + `"}]`)

// updateBurst changes the image of every host Deployment and measures how
// fast every member copy follows.
func (b *bench) updateBurst(ctx context.Context, s *scenario, cr *createResult) error {
	n, m := b.opts.workloads, len(b.members)
	updated := b.rec.begin(n*m, func(o observation) bool {
		return o.cluster != localenv.HostName && o.kind == kindDeployment && o.image == imageV2
	})
	defer b.rec.end(updated)
	before, err := b.cmLoadNow(ctx)
	if err != nil {
		return err
	}
	logf("update burst: new image for %d host Deployments", n)
	profiled := b.prof.cpu(ctx, "cpu-update")
	defer profiled()
	begin := time.Now()
	patched, err := timed(ctx, n, b.opts.workers, func(ctx context.Context, i int) error {
		_, err := b.host.AppsV1().Deployments(cr.ns).Patch(ctx, workloadName(i), types.JSONPatchType, imagePatch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("patch Deployment %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := updated.wait(ctx, "member copies updated"); err != nil {
		b.prof.goroutines(ctx, "goroutines-update-stuck")
		return fmt.Errorf("%w; not updated: %s", err, b.missing(updated, n, kindDeployment, workloadName))
	}
	_, last := updated.progress()
	lat, err := b.latencies(patched, func(mc memberCluster, i int) (time.Time, bool) {
		return updated.at(mc.name, kindDeployment, workloadName(i))
	})
	if err != nil {
		return err
	}
	s.addSummary("copy latency", lat)
	s.add("all member copies updated after", last.Sub(begin).Seconds(), "s", "")
	s.add("update throughput", rate(n*m, last.Sub(begin)), "obj/s", "")
	idle, err := b.waitIdle(ctx, 0, settleTimeout)
	if err != nil {
		return err
	}
	s.add("controllers idle after", idle.since.Sub(begin).Seconds(), "s", "")
	s.addControllers(idle.load.since(before), cr.federatedObjects)
	b.prof.heap(ctx, "heap-update")
	return nil
}

// missing lists (up to 10 of) the member objects of kind, named by name(i)
// for i < n, that phase p has not seen.
func (b *bench) missing(p *phase, n int, kind string, name func(int) string) string {
	var out []string
	total := 0
	for i := range n {
		for _, mc := range b.members {
			if _, ok := p.at(mc.name, kind, name(i)); !ok {
				total++
				if len(out) < 10 {
					out = append(out, mc.name+"/"+name(i))
				}
			}
		}
	}
	if total > len(out) {
		out = append(out, fmt.Sprintf("and %d more", total-len(out)))
	}
	return strings.Join(out, ", ")
}

// restart SIGKILLs the controller-manager in steady state, starts it again
// with `flotilla up` and checks that it catches up without writing to the
// members.
func (b *bench) restart(ctx context.Context, s *scenario) error {
	fos, err := b.countFederatedObjects(ctx, "")
	if err != nil {
		return err
	}
	if _, err := b.waitIdle(ctx, 0, settleTimeout); err != nil {
		return err
	}
	before, err := b.memberWrites(ctx)
	if err != nil {
		return err
	}
	hostBefore, eventsBefore, err := b.hostWrites(ctx)
	if err != nil {
		return err
	}
	statusBefore, err := b.deploymentStatuses(ctx)
	if err != nil {
		return err
	}
	cm, err := b.controllerManager()
	if err != nil {
		return err
	}
	// Pull members' agents are killed with it: each restarts over every
	// intent of its member, which must write nothing there either.
	agents, err := b.agents()
	if err != nil {
		return err
	}
	logf("restart: SIGKILL controller-manager (pid %d) and %d agent(s), then `flotilla up`", cm.PID, len(agents))
	killed := time.Now()
	pids := []int{cm.PID}
	for _, a := range agents {
		pids = append(pids, a.PID)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill pid %d: %w", pid, err)
		}
	}
	if err := poll.Until(ctx, 10*time.Second, func(context.Context) error {
		for _, pid := range pids {
			if !gone(pid) {
				return fmt.Errorf("pid %d still running", pid)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := b.upAgain(ctx); err != nil {
		return err
	}
	ready := time.Now()
	profiled := b.prof.cpu(ctx, "cpu-restart")
	idle, err := b.waitIdle(ctx, fos, settleTimeout)
	if err != nil {
		return err
	}
	profiled()
	b.prof.heap(ctx, "heap-restart")
	after, err := b.memberWrites(ctx)
	if err != nil {
		return err
	}
	// The host apiserver's counters survive the controller-manager's
	// restart; the harness writes nothing meanwhile.
	hostAfter, eventsAfter, err := b.hostWrites(ctx)
	if err != nil {
		return err
	}
	writes := 0
	for name, v := range after {
		writes += v - before[name]
	}
	s.add("process ready (/readyz) after", ready.Sub(killed).Seconds(), "s", "")
	s.add("controllers running after", idle.running.Sub(killed).Seconds(), "s", "")
	s.add("idle again after", idle.since.Sub(killed).Seconds(), "s", "< 30 s")
	s.goal(idle.since.Sub(killed) < 30*time.Second)
	s.add("member writes during restart", float64(writes), "count", "= 0")
	s.check(writes == 0)
	statusAfter, err := b.deploymentStatuses(ctx)
	if err != nil {
		return err
	}
	changed, examples := statusChanges(statusBefore, statusAfter, 3)
	s.details["hostStatusesChangedByRestart"] = changed
	for _, e := range examples {
		s.note("restart: host Deployment status changed: %s", e)
	}
	hostWrites, hostTotal := writesSince(hostBefore, hostAfter)
	s.add("host object and status writes during restart", float64(hostTotal), "count", "= 0")
	s.goal(hostTotal == 0)
	if hostTotal > 0 {
		s.note("restart: host writes by request: %v", hostWrites)
	}
	s.details["hostWritesDuringRestart"] = hostWrites
	s.add("host events during restart", float64(eventsAfter-eventsBefore), "count", "")
	s.addControllers(idle.load.Controllers, fos)
	s.details["memberWritesBefore"], s.details["memberWritesAfter"] = before, after
	s.note("restart: the controllers start once the new process holds the leader lease: at once when it resumes its own (flotilla up gives its controller-manager the stable identity flotilla-up), after the killed process's lease expired otherwise (an environment recorded before that identity existed); idle: every FederatedObject reconciled by propagate, then %s with empty queues, no active worker and no reconcile", idleHold)
	s.note("writes: members' apiserver_request_total, POST/PUT/PATCH/APPLY/DELETE on deployments, configmaps, namespaces; host: the same verbs on deployments, configmaps, namespaces, federatedobjects, memberclusters, clusterintents, status included (leases left out)")
	if len(agents) > 0 {
		s.note("restart: %d pull agent(s) were killed and restarted with the controller-manager; member writes cover theirs", len(agents))
	}
	if cm, err = b.controllerManager(); err == nil {
		if rss, _, err := procMemory(cm.PID); err == nil {
			s.add("RSS after restart, idle", kibToMiB(rss), "MiB", "")
		}
	}
	return nil
}

// memory reports the controller-manager's memory and the host etcd's size
// against the baseline taken before any workload existed.
func (b *bench) memory(ctx context.Context, s *scenario, cr *createResult) error {
	now, err := b.measureUsage(ctx)
	if err != nil {
		return err
	}
	n := float64(b.opts.workloads)
	base, created := b.baseline, cr.afterCreate
	s.add("RSS, no workloads", kibToMiB(base.RSSKiB), "MiB", "")
	s.add("RSS after the create burst", kibToMiB(created.RSSKiB), "MiB", "")
	s.add("RSS per workload", float64(created.RSSKiB-base.RSSKiB)/n, "KiB", "< 50 KiB")
	s.goal(float64(created.RSSKiB-base.RSSKiB)/n < 50)
	s.add("RSS now (after the update burst and paced load)", kibToMiB(now.RSSKiB), "MiB", "")
	s.add("peak RSS (VmHWM)", kibToMiB(now.HWMKiB), "MiB", "")
	s.add("host etcd size, no workloads", float64(base.EtcdBytes)/(1<<20), "MiB", "")
	s.add("host etcd size after the create burst", float64(created.EtcdBytes)/(1<<20), "MiB", "")
	s.add("host etcd size per workload", float64(created.EtcdBytes-base.EtcdBytes)/n, "B", "")
	if base.EtcdInUseBytes >= 0 && created.EtcdInUseBytes >= 0 {
		s.add("host etcd in use per workload", float64(created.EtcdInUseBytes-base.EtcdInUseBytes)/n, "B", "")
	}
	s.details["baseline"], s.details["afterCreate"], s.details["afterUpdate"] = base, created, now
	s.note("a workload is a Deployment and its ConfigMap (2 host objects, 2 FederatedObjects, %d member copies); etcd size is etcd_mvcc_db_total_size_in_bytes, history included", 2*len(b.members))
	return nil
}

// kibToMiB converts KiB to MiB.
func kibToMiB(v int64) float64 { return float64(v) / 1024 }
