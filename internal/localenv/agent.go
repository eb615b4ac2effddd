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

// bootstrapDuration is how long the agents' bootstrap tokens last: a local
// environment lives for days at most.
const bootstrapDuration = 30 * 24 * time.Hour

// joinPull registers member p in pull mode as `flotilla join --mode pull
// --bootstrap-kubeconfig --accept` does (the admin of a local environment
// accepts its own members), and starts its agent, which asks for its
// certificate with that kubeconfig and keeps it in the member's directory;
// the agent is recorded under the member (index idx) so that down stops it
// and up restarts it.
func (s *starter) joinPull(ctx context.Context, hostCfg *rest.Config, p *clusterPlan, labels map[string]string, idx int) error {
	creds, err := join.JoinPull(ctx, join.PullOptions{Name: p.name, Host: hostCfg, Labels: labels, BootstrapDuration: bootstrapDuration, Accept: true})
	if err != nil {
		return fmt.Errorf("join %s in pull mode: %w", p.name, err)
	}
	bootstrap := filepath.Join(p.dir(), "agent-bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrap, creds.Bootstrap, 0o600); err != nil {
		return fmt.Errorf("%s: write the agent's bootstrap kubeconfig: %w", p.name, err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	c := p.agent(s.opts.Flotilla, bootstrap, s.gateway, ports)
	pr, err := startProcess(c, c.Args, s.opts.Detach)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	s.record(idx, pr)
	return waitFor(ctx, p.name+" "+Agent, readyTimeout, pr.exited, func(ctx context.Context) error {
		return s.prober.probe(ctx, c.HealthURL)
	})
}

// agent renders a pull member's agent component: it asks the hub for its
// certificate with join's bootstrap kubeconfig, keeps it in the member's
// agent-pki directory, reaches the member as its admin, elects itself through a Lease
// in the member's kube-system namespace, serves metrics and probes on
// the given ports, and keeps a tunnel open to the gateway (if it runs) so
// that the gateway serves the member's pods.
func (p *clusterPlan) agent(binary, bootstrapKubeconfig, gateway string, ports []int) ComponentState {
	c := ComponentState{
		Name: Agent, Binary: binary, Port: ports[1], Ports: ports,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		Log:       p.log(Agent),
		Args: []string{
			"agent",
			"--cluster=" + p.name,
			"--bootstrap-kubeconfig=" + bootstrapKubeconfig,
			"--cert-dir=" + filepath.Join(p.dir(), "agent-pki"),
			"--kubeconfig=" + p.kubeconfig(),
			"--leader-election-namespace=kube-system",
			"--identity=flotilla-up-" + p.name,
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		},
	}
	if gateway != "" {
		c.Args = append(c.Args, "--gateway-url="+gateway)
	}
	return c
}
