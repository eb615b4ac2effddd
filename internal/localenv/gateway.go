package localenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flotilla-io/flotilla/config/rbac"
)

// Gateway is the component name of `flotilla gateway` in the host's
// component list.
const Gateway = "flotilla-gateway"

// gatewayUsername is the gateway's identity on the host: its ServiceAccount,
// authenticated by a static token as the controller-manager's is, and bound
// to config/rbac/gateway.yaml's role.
const gatewayUsername = "system:serviceaccount:" + rbac.Namespace + ":" + rbac.GatewayServiceAccount

// Files of the host's gateway.
func (p paths) gatewayKubeconfig() string { return filepath.Join(p.dir(), "gateway.kubeconfig") }
func (p paths) gatewayAuditPolicy() string {
	return filepath.Join(p.dir(), "gateway-audit-policy.yaml")
}

// GatewayAdminKubeconfig is the admin kubeconfig of the environment in
// stateDir that reaches the host through the gateway (`flotilla kubeconfig
// gateway`); it exists once the gateway has started.
func GatewayAdminKubeconfig(stateDir string) string {
	return filepath.Join(stateDir, "clusters", HostName, "gateway-admin.kubeconfig")
}

// GatewayAuditPolicy is the gateway's audit policy in `flotilla up`: every
// request's metadata (who, what, when, the answer's code), not bodies, so
// that Secrets and tokens stay out of the log.
const GatewayAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
- level: Metadata
`

// prepareGateway writes the gateway's serving certificate (from the
// environment's CA), its host kubeconfig and its audit policy, and
// returns the tokens.csv line of its identity.
func (p *clusterPlan) prepareGateway(ca *authority, token string) (string, error) {
	cert, key, err := ca.issueServing(Gateway)
	if err != nil {
		return "", err
	}
	if err := writeFiles(map[string][]byte{
		p.pki("gateway.crt"):   cert,
		p.pki("gateway.key"):   key,
		p.gatewayAuditPolicy(): []byte(GatewayAuditPolicy),
	}); err != nil {
		return "", err
	}
	if err := writeKubeconfig(identityKubeconfigFor(p.name, p.server(), ca.certPEM, rbac.GatewayServiceAccount, token), p.gatewayKubeconfig()); err != nil {
		return "", err
	}
	groups := `"system:serviceaccounts,system:serviceaccounts:` + rbac.Namespace + `"`
	return fmt.Sprintf("%s,%s,%s,%s\n", token, gatewayUsername, gatewayUsername, groups), nil
}

// gateway renders the gateway component on the host, serving on port with
// the environment's PKI, authenticating as the host does and auditing to
// its log directory.
func (p *clusterPlan) gateway(binary string, port int) ComponentState {
	return ComponentState{
		Name: Gateway, Binary: binary, Port: port, Ports: []int{port},
		HealthURL: fmt.Sprintf("https://127.0.0.1:%d/readyz", port),
		Log:       p.log(Gateway),
		Args: []string{
			"gateway",
			"--host-kubeconfig=" + p.gatewayKubeconfig(),
			"--client-ca-file=" + p.clientCA(RoleHost),
			"--tls-cert-file=" + p.pki("gateway.crt"),
			"--tls-private-key-file=" + p.pki("gateway.key"),
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--audit-log-path=" + p.log("gateway-audit"),
			"--audit-policy-file=" + p.gatewayAuditPolicy(),
			"--audit-log-maxsize=100",
			"--audit-log-maxbackup=1",
		},
	}
}

// startGateway starts the gateway in front of the host and writes the admin
// kubeconfig that reaches the host through it.
func (s *starter) startGateway(ctx context.Context, host *clusterPlan) error {
	begin := time.Now()
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	c := host.gateway(s.opts.Flotilla, ports[0])
	pr, err := startProcess(c, c.Args, s.opts.Detach)
	if err != nil {
		return err
	}
	s.record(0, pr)
	if err := waitFor(ctx, Gateway, readyTimeout, pr.exited, func(ctx context.Context) error {
		return s.prober.probe(ctx, c.HealthURL)
	}); err != nil {
		return fmt.Errorf("%w (log: %s)", err, c.Log)
	}
	caPEM, err := os.ReadFile(host.caCert())
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	s.gateway = server
	if err := writeKubeconfig(kubeconfigFor("gateway", server, caPEM, s.prober.token), GatewayAdminKubeconfig(host.stateDir)); err != nil {
		return err
	}
	s.printf("  %-10s ready in %s (%s)\n", "gateway", time.Since(begin).Round(100*time.Millisecond), server)
	return nil
}
