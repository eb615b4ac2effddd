package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/join"
)

// Agent is the component name of a pull member's `flotilla agent`.
const Agent = "flotilla-agent"

// agentTokenDuration is how long the agents' hub tokens last: a local
// environment lives for days at most.
const agentTokenDuration = 30 * 24 * time.Hour

// joinPull registers member p in pull mode (`flotilla join --mode pull`'s
// code, with the agent's token kubeconfig in the member's directory) and
// starts its agent, recorded under the member (index idx) so that down
// stops it and up restarts it.
func (s *starter) joinPull(ctx context.Context, hostCfg *rest.Config, p *clusterPlan, labels map[string]string, idx int) error {
	kubeconfig, err := join.JoinPull(ctx, join.PullOptions{Name: p.name, Host: hostCfg, Labels: labels, TokenDuration: agentTokenDuration})
	if err != nil {
		return fmt.Errorf("join %s in pull mode: %w", p.name, err)
	}
	hub := filepath.Join(p.dir(), "agent-hub.kubeconfig")
	if err := os.WriteFile(hub, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("%s: write the agent's hub kubeconfig: %w", p.name, err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	c := p.agent(s.opts.Flotilla, hub, ports)
	pr, err := startProcess(c, c.Args, s.opts.Detach)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	s.record(idx, pr)
	return waitFor(ctx, p.name+" "+Agent, readyTimeout, pr.exited, func(ctx context.Context) error {
		return s.prober.probe(ctx, c.HealthURL)
	})
}

// agent renders a pull member's agent component: it reaches the hub with
// join's token and the member as its admin, elects itself through a Lease
// in the member's kube-system namespace, and serves metrics and probes on
// the given ports.
func (p *clusterPlan) agent(binary, hubKubeconfig string, ports []int) ComponentState {
	return ComponentState{
		Name: Agent, Binary: binary, Port: ports[1], Ports: ports,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		Log:       p.log(Agent),
		Args: []string{
			"agent",
			"--cluster=" + p.name,
			"--hub-kubeconfig=" + hubKubeconfig,
			"--kubeconfig=" + p.kubeconfig(),
			"--leader-election-namespace=kube-system",
			"--identity=flotilla-up-" + p.name,
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		},
	}
}
