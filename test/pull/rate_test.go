package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestDeploymentRateByWeightMode measures the seed's claim that with
// water-level weights every member runs at least 95% of the replicas
// placed in it (its deployment rate), on members of uneven shape:
// member-1 has six 2-core nodes (room for one 1.5-core replica each,
// although its sums, which also count its other nodes, show far more),
// member-2 three 8-core nodes (five each). Ten workloads of two replicas
// are created in one burst under each placement in turn; a member's rate
// is its Running pods over the replicas placed there, once every pod is
// either Running or Unschedulable.
func TestDeploymentRateByWeightMode(t *testing.T) {
	host, members := clients(t)
	addSimNodes(t, host, members[push], push, "rate", 6, "2")
	addSimNodes(t, host, members[push2], push2, "rate", 3, "8")
	profile := writeManifest(t, `apiVersion: flotilla.io/v1alpha1
kind: SchedulingProfile
metadata:
  name: e2e-sums
spec:
  pluginConfig:
  - name: Replicas
    args: {nodeEstimates: false}
`)
	kubectlGateway(t, "apply", "-f", profile)
	t.Cleanup(func() { _, _ = kubectlGatewayErr("delete", "schedulingprofile", "e2e-sums") })
	modes := []struct {
		name, placement string
		// full says every member must run everything placed there.
		full bool
	}{
		{"static, listed equal weights", fmt.Sprintf("replicaScheduling: {type: Divide, weights: [{cluster: %s, weight: 1}, {cluster: %s, weight: 1}]}", push, push2), false},
		{"water level, status sums", "schedulingProfile: e2e-sums\n    replicaScheduling: {type: Divide, weightMode: WaterLevel}", false},
		{"static, no weights (default)", "replicaScheduling: {type: Divide}", true},
		{"water level, simulated", "replicaScheduling: {type: Divide, weightMode: WaterLevel}", true},
	}
	var table []string
	for i, mode := range modes {
		ns := fmt.Sprintf("rate-%d", i)
		var objects []string
		for j := range 10 {
			objects = append(objects, simDeployment(ns, fmt.Sprintf("w%d", j), 2, "1500m"))
		}
		applySimPlacement(t, ns, strings.Join(objects, "---\n"), mode.placement)
		placed := map[string]int{}
		eventually(t, mode.name+": 20 replicas placed and every pod Running or Unschedulable", func(ctx context.Context) error {
			list := &v1alpha1.FederatedObjectList{}
			if err := host.List(ctx, list); err != nil {
				return err
			}
			placed = map[string]int{}
			total := 0
			for _, fo := range list.Items {
				if fo.Namespace != ns {
					continue
				}
				for _, p := range fo.Placement() {
					if p.Replicas != nil {
						placed[p.Cluster] += int(*p.Replicas)
						total += int(*p.Replicas)
					}
				}
			}
			if total != 20 {
				return fmt.Errorf("%d replicas placed", total)
			}
			running, pending, err := simPods(ctx, members, ns)
			if err != nil {
				return err
			}
			for _, m := range []string{push, push2} {
				if running[m]+pending[m] != placed[m] {
					return fmt.Errorf("%s: %d placed, %d Running, %d Unschedulable", m, placed[m], running[m], pending[m])
				}
			}
			for m := range placed {
				if mode.full && running[m] < placed[m] {
					t.Errorf("%s: %s runs %d of its %d replicas", mode.name, m, running[m], placed[m])
				}
			}
			table = append(table, fmt.Sprintf("| %s | %s | %s |", mode.name, rateOf(push, placed, running), rateOf(push2, placed, running)))
			return nil
		})
		deleteSimNamespace(t, members, ns)
	}
	t.Logf("deployment rate (Running / placed) per member:\n| placement | %s | %s |\n|---|---|---|\n%s", push, push2, strings.Join(table, "\n"))
}

func rateOf(member string, placed, running map[string]int) string {
	if placed[member] == 0 {
		return "none placed"
	}
	return fmt.Sprintf("%d/%d = %.0f%%", running[member], placed[member], 100*float64(running[member])/float64(placed[member]))
}
