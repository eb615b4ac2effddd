package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// settleTimeout bounds the wait for the controllers to become idle after a
// burst whose member copies have all been seen.
const settleTimeout = 5 * time.Minute

// createResult is what the create burst leaves for the later scenarios.
type createResult struct {
	// ns is the host namespace of the workloads.
	ns string
	// created is when each workload's host create returned.
	created []time.Time
	// rate is the propagation throughput, member objects per second.
	rate float64
	// p99 is the 99th percentile of the workload latency, seconds.
	p99 float64
	// federatedObjects is how many FederatedObjects the workloads made.
	federatedObjects int
	// status collects when host Deployments reported ready, podsReady
	// when member pods turned Ready, membersReady when member Deployments
	// reported ready (full members only; nil otherwise).
	status, podsReady, membersReady *phase
	// afterCreate is the resource use once the burst settled.
	afterCreate usage
}

// createBurst creates N workloads selected by one policy and measures how
// fast their copies reach every member.
func (b *bench) createBurst(ctx context.Context, s *scenario) (*createResult, error) {
	n, m := b.opts.workloads, len(b.members)
	cr := &createResult{ns: benchNamespace}
	if _, err := b.host.CoreV1().Namespaces().Create(ctx, namespace(cr.ns), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create host namespace: %w", err)
	}
	// Watch before creating anything, so that no event is missed.
	full := b.statusUnsupported() == ""
	for _, mc := range b.members {
		if err := b.watchCluster(mc.cs, mc.name, cr.ns, true, full); err != nil {
			return nil, err
		}
	}
	if full {
		if err := b.watchCluster(b.host, localenv.HostName, cr.ns, false, false); err != nil {
			return nil, err
		}
		cr.status = b.rec.begin(n, func(o observation) bool {
			return o.cluster == localenv.HostName && o.kind == kindDeployment && o.ready
		})
		// One replica per member (Divide, replicas = M), so one pod.
		cr.podsReady = b.rec.begin(n*m, func(o observation) bool {
			return o.cluster != localenv.HostName && o.kind == kindPod && o.ready
		})
		cr.membersReady = b.rec.begin(n*m, func(o observation) bool {
			return o.cluster != localenv.HostName && o.kind == kindDeployment && o.ready
		})
	}
	if err := b.hostCR.Create(ctx, policy(cr.ns)); err != nil {
		return nil, fmt.Errorf("create the ClusterPropagationPolicy: %w", err)
	}
	copies := b.rec.begin(2*n*m, isCopy)
	defer b.rec.end(copies)
	before, err := b.cmLoadNow(ctx)
	if err != nil {
		return nil, err
	}
	hostBefore, eventsBefore, err := b.hostWrites(ctx)
	if err != nil {
		return nil, err
	}

	logf("create burst: %d Deployments + %d ConfigMaps in the host from %d goroutines", n, n, b.opts.workers)
	profiled := b.prof.cpu(ctx, "cpu-create")
	defer profiled()
	begin := time.Now()
	cr.created, err = timed(ctx, n, b.opts.workers, func(ctx context.Context, i int) error {
		if _, err := b.host.CoreV1().ConfigMaps(cr.ns).Create(ctx, configMap(cr.ns, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap %d: %w", i, err)
		}
		if _, err := b.host.AppsV1().Deployments(cr.ns).Create(ctx, deployment(cr.ns, i, int32(m)), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Deployment %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	hostDone := time.Now()
	logf("  host objects created in %s; waiting for %d member copies", hostDone.Sub(begin).Round(time.Millisecond), 2*n*m)
	if err := copies.wait(ctx, "member copies"); err != nil {
		return nil, err
	}
	_, last := copies.progress()
	lat, err := b.latencies(cr.created, func(mc memberCluster, i int) (time.Time, bool) {
		return copies.at(mc.name, kindDeployment, workloadName(i))
	})
	if err != nil {
		return nil, err
	}
	cr.rate = rate(2*n*m, last.Sub(begin))
	cr.p99 = summarize(lat).P99
	s.add("host objects created", float64(2*n), "count", "")
	s.add("host create rate", rate(2*n, hostDone.Sub(begin)), "obj/s", "")
	s.addSummary("workload latency", lat)
	s.add("all member copies present after", last.Sub(begin).Seconds(), "s", "")
	s.add("member objects written", float64(2*n*m), "count", "")
	s.add("propagation throughput", cr.rate, "obj/s", "")
	s.note("latency: from the host Deployment create returning to the copy seen in every member (%d each, Divide); throughput: member Deployments+ConfigMaps / (last seen − first create)", m)

	idle, err := b.waitIdle(ctx, 0, settleTimeout)
	if err != nil {
		return nil, err
	}
	s.add("controllers idle after", idle.since.Sub(begin).Seconds(), "s", "")
	if cr.federatedObjects, err = b.countFederatedObjects(ctx, cr.ns); err != nil {
		return nil, err
	}
	s.add("FederatedObjects", float64(cr.federatedObjects), "count", fmt.Sprintf("= %d", 2*n))
	s.check(cr.federatedObjects == 2*n)
	s.addControllers(idle.load.since(before), cr.federatedObjects)
	if err := b.reportHostWrites(ctx, s, hostBefore, eventsBefore, 2*n); err != nil {
		return nil, err
	}
	if cr.afterCreate, err = b.measureUsage(ctx); err != nil {
		return nil, err
	}
	b.prof.heap(ctx, "heap-create")
	return cr, nil
}

// latencies computes, per workload, the time from start[i] to the moment
// at reports for the last of its members.
func (b *bench) latencies(start []time.Time, at func(memberCluster, int) (time.Time, bool)) ([]time.Duration, error) {
	out := make([]time.Duration, len(start))
	for i := range start {
		for _, mc := range b.members {
			t, ok := at(mc, i)
			if !ok {
				return nil, fmt.Errorf("workload %s never seen in %s", workloadName(i), mc.name)
			}
			out[i] = max(out[i], t.Sub(start[i]))
		}
	}
	return out, nil
}

// countFederatedObjects counts the FederatedObjects of a namespace (all
// namespaces when ns is empty).
func (b *bench) countFederatedObjects(ctx context.Context, ns string) (int, error) {
	list := &v1alpha1.FederatedObjectList{}
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := b.hostCR.List(ctx, list, opts...); err != nil {
		return 0, fmt.Errorf("list FederatedObjects: %w", err)
	}
	return len(list.Items), nil
}

// statusLatency reports, with full members, the time from each host
// create to the host Deployment reporting all its replicas ready.
func (b *bench) statusLatency(ctx context.Context, s *scenario, cr *createResult) error {
	defer b.rec.end(cr.status)
	defer b.rec.end(cr.podsReady)
	defer b.rec.end(cr.membersReady)
	if err := cr.podsReady.wait(ctx, "member pods Ready"); err != nil {
		return err
	}
	if err := cr.membersReady.wait(ctx, "member Deployments ready"); err != nil {
		return err
	}
	if err := cr.status.wait(ctx, "host Deployments ready"); err != nil {
		return err
	}
	status := make([]time.Duration, len(cr.created))
	members := make([]time.Duration, len(cr.created))
	flotilla := make([]time.Duration, len(cr.created))
	total := make([]time.Duration, len(cr.created))
	early := 0
	for i, c := range cr.created {
		name := workloadName(i)
		ready, ok := cr.status.at(localenv.HostName, kindDeployment, name)
		if !ok {
			return fmt.Errorf("host Deployment %s never ready", name)
		}
		var lastPod, lastMember time.Time
		for _, mc := range b.members {
			t, ok := cr.podsReady.at(mc.name, kindPod, name)
			if !ok {
				return fmt.Errorf("no Ready pod of %s seen in %s", name, mc.name)
			}
			if t.After(lastPod) {
				lastPod = t
			}
			if t, ok = cr.membersReady.at(mc.name, kindDeployment, name); !ok {
				return fmt.Errorf("member Deployment %s never ready in %s", name, mc.name)
			}
			if t.After(lastMember) {
				lastMember = t
			}
		}
		status[i] = ready.Sub(lastPod)
		if status[i] < 0 {
			// The harness's member watch delivered the pod after the
			// host watch delivered the status built from it.
			status[i], early = 0, early+1
		}
		// The members' share: their ReplicaSet and Deployment controllers
		// bringing the pod's readiness into the member Deployment's status;
		// Flotilla's: from there to the host status (member watch, status
		// controller, host patch, host watch).
		members[i] = max(lastMember.Sub(lastPod), 0)
		flotilla[i] = max(ready.Sub(lastMember), 0)
		total[i] = ready.Sub(c)
	}
	s.addSummary("status latency", status)
	p99 := summarize(status).P99
	s.add("status latency p99 goal", 2, "s", fmt.Sprintf("p99 %.2f s", p99))
	s.goal(p99 < 2)
	s.addSummary("members' share (pod Ready → member Deployment ready)", members)
	s.addSummary("Flotilla's share (member Deployment ready → host ready)", flotilla)
	fp99 := summarize(flotilla).P99
	s.add("Flotilla's share p99 goal", 0.5, "s", fmt.Sprintf("p99 %.2f s", fp99))
	s.goal(fp99 < 0.5)
	s.addSummary("create → host ready", total)
	s.note("status latency: from the last of the workload's member pods turning Ready (as the harness's member watches saw it) to the host Deployment's status reporting %d/%d ready for its generation (as the harness's host watch saw it); %d of %d counted 0 because the host watch was first", len(b.members), len(b.members), early, len(status))
	return nil
}

// reportHostWrites adds the controllers' host writes per FederatedObject
// during a burst in which the harness created objects host objects (half
// Deployments, half ConfigMaps; one FederatedObject each): every write
// request on the host's objects, status and events included, less the
// harness's own creates.
func (b *bench) reportHostWrites(ctx context.Context, s *scenario, before map[string]int, eventsBefore, objects int) error {
	after, eventsAfter, err := b.hostWrites(ctx)
	if err != nil {
		return err
	}
	writes, total := writesSince(before, after)
	for _, own := range []string{"POST deployments", "POST configmaps"} {
		mine := min(writes[own], objects/2)
		total -= mine
		if writes[own] -= mine; writes[own] == 0 {
			delete(writes, own)
		}
	}
	events := eventsAfter - eventsBefore
	perObject := float64(total+events) / float64(objects)
	s.add("host writes per FederatedObject (events included)", perObject, "count", "≤ 4")
	s.goal(perObject <= 4)
	s.note("host writes by request, harness creates left out: %v; events: %d", writes, events)
	s.details["hostWritesByRequest"], s.details["hostEventWrites"] = writes, events
	return nil
}
