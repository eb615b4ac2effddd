package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// paced creates workloads at a steady rate (--paced-rate for
// --paced-duration) after the bursts, on top of the N already there, and
// measures create → present in every member while the controllers are not
// saturated: the latency a user sees in normal operation.
func (b *bench) paced(ctx context.Context, s *scenario, cr *createResult) error {
	n := int(b.opts.pacedRate * b.opts.pacedDuration.Seconds())
	if n < 1 {
		return fmt.Errorf("--paced-rate × --paced-duration gives no workload")
	}
	first, m := b.opts.workloads, len(b.members)
	names := make(map[string]bool, 2*n)
	for i := first; i < first+n; i++ {
		names[workloadName(i)], names[configMapName(i)] = true, true
	}
	copies := b.rec.begin(2*n*m, func(o observation) bool { return isCopy(o) && names[o.name] })
	defer b.rec.end(copies)
	if _, err := b.waitIdle(ctx, 0, settleTimeout); err != nil {
		return err
	}
	logf("paced load: %d workloads at %g/s", n, b.opts.pacedRate)
	interval := time.Duration(float64(time.Second) / b.opts.pacedRate)
	created := make([]time.Time, n)
	g, gctx := errgroup.WithContext(ctx)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	begin := time.Now()
	for j := range n {
		if j > 0 {
			select {
			case <-gctx.Done():
			case <-tick.C:
			}
		}
		if gctx.Err() != nil {
			break
		}
		i := first + j
		g.Go(func() error {
			if _, err := b.host.CoreV1().ConfigMaps(cr.ns).Create(gctx, configMap(cr.ns, i), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create ConfigMap %d: %w", i, err)
			}
			if _, err := b.host.AppsV1().Deployments(cr.ns).Create(gctx, deployment(cr.ns, i, int32(m)), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Deployment %d: %w", i, err)
			}
			created[j] = time.Now()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	offered := time.Since(begin)
	if err := copies.wait(ctx, "paced member copies"); err != nil {
		return err
	}
	lat := make([]time.Duration, n)
	for j := range n {
		for _, mc := range b.members {
			t, ok := copies.at(mc.name, kindDeployment, workloadName(first+j))
			if !ok {
				return fmt.Errorf("workload %s never seen in %s", workloadName(first+j), mc.name)
			}
			lat[j] = max(lat[j], t.Sub(created[j]))
		}
	}
	s.add("workloads created", float64(n), "count", "")
	s.add("offered rate", rate(n, offered), "workloads/s", "")
	s.addSummary("workload latency", lat)
	p99 := summarize(lat).P99
	s.add("workload latency p99 goal", 1, "s", fmt.Sprintf("p99 %.2f s", p99))
	s.goal(p99 < 1)
	s.note("latency: from the host Deployment create returning to the copy seen in every member; workloads %s..%s, created one per %s on top of the %d from the create burst", workloadName(first), workloadName(first+n-1), interval, first)
	return nil
}
