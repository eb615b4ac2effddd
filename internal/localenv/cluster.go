package localenv

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flotilla-io/flotilla/internal/components"
)

// Network settings shared by every cluster (each cluster is separate, so
// they may overlap).
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// hostControllers are the only kube-controller-manager controllers the host
// runs: host objects are templates, so nothing may act on them except
// namespace deletion and garbage collection. ClusterRole aggregation fills
// the built-in admin, edit and view roles, without which the host's check
// of a RoleBinding to them would pass for anyone (docs/security.md).
var hostControllers = []string{"namespace-controller", "garbage-collector-controller", "clusterrole-aggregation-controller"}

// paths lays out one cluster's files under the state directory.
type paths struct {
	stateDir string
	name     string
}

func (p paths) dir() string        { return filepath.Join(p.stateDir, "clusters", p.name) }
func (p paths) kubeconfig() string { return filepath.Join(p.dir(), "kubeconfig") }
func (p paths) controllerKubeconfig() string {
	return filepath.Join(p.dir(), "controller-manager.kubeconfig")
}
func (p paths) pki(f string) string     { return filepath.Join(p.dir(), "pki", f) }
func (p paths) log(c string) string     { return filepath.Join(p.dir(), "logs", c+".log") }
func (p paths) certDir(c string) string { return filepath.Join(p.dir(), "certs", c) }
func (p paths) etcdData() string        { return filepath.Join(p.dir(), "etcd") }
func (p paths) caCert() string          { return filepath.Join(p.stateDir, "pki", "ca.crt") }

// clientCA is the CA bundle an apiserver trusts for client certificates:
// the environment's CA and, on the host, the agent signer's too.
func (p paths) clientCA(role string) string {
	if role == RoleHost {
		return filepath.Join(p.stateDir, "pki", "host-client-ca.crt")
	}
	return p.caCert()
}

// HostClientCAFile is the CA bundle the host apiserver of the environment
// in stateDir trusts for client certificates; the gateway trusts the same.
func HostClientCAFile(stateDir string) string {
	return paths{stateDir: stateDir}.clientCA(RoleHost)
}

// AgentSignerFiles are the certificate and key of the CA that signs pull
// agents' client certificates in the environment in stateDir: the host
// apiserver trusts it for client certificates, and the controller-manager
// signs with it.
func AgentSignerFiles(stateDir string) (certFile, keyFile string) {
	return filepath.Join(stateDir, "pki", "agent-ca.crt"), filepath.Join(stateDir, "pki", "agent-ca.key")
}

// clusterPlan is everything needed to render a cluster's command lines.
type clusterPlan struct {
	paths
	role  string
	mode  MemberMode
	index int // 1-based member index; 0 for the host
	ports portSet
}

// portSet holds the ports one cluster's components listen on.
type portSet struct {
	etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok, metrics int
}

// componentNames lists the components a cluster runs, in start order.
func (p clusterPlan) componentNames() []string {
	switch {
	case p.role == RoleHost:
		return []string{components.Etcd, components.KubeAPIServer, components.KubeControllerManager}
	case p.mode == ModeAPIServerOnly:
		return []string{components.Etcd, components.KubeAPIServer}
	default:
		return []string{components.Etcd, components.KubeAPIServer, components.KubeControllerManager, components.KubeScheduler, components.Kwok, components.MetricsServer}
	}
}

// portsNeeded is how many free ports the plan's components need.
func (p clusterPlan) portsNeeded() int { return len(p.componentNames()) + 1 } // etcd takes two

func (p *clusterPlan) assignPorts(free []int) {
	p.ports = portSet{etcdClient: free[0], etcdPeer: free[1], apiserver: free[2]}
	rest := free[3:]
	for _, c := range p.componentNames()[2:] {
		switch c {
		case components.KubeControllerManager:
			p.ports.controllerManager = rest[0]
		case components.KubeScheduler:
			p.ports.scheduler = rest[0]
		case components.Kwok:
			p.ports.kwok = rest[0]
		case components.MetricsServer:
			p.ports.metrics = rest[0]
		}
		rest = rest[1:]
	}
}

func (p clusterPlan) server() string { return fmt.Sprintf("https://127.0.0.1:%d", p.ports.apiserver) }

// component renders the state (binary, arguments, ports, health URL, log) of
// one component of the cluster.
func (p clusterPlan) component(set components.Set, name string) (ComponentState, []string) {
	c := ComponentState{Name: name, Binary: set.Path(name), Log: p.log(name)}
	var args []string
	switch name {
	case components.Etcd:
		c.Port, c.Ports = p.ports.etcdClient, []int{p.ports.etcdClient, p.ports.etcdPeer}
		c.HealthURL = fmt.Sprintf("http://127.0.0.1:%d/health", p.ports.etcdClient)
		args = []string{
			"--name=" + p.name,
			"--data-dir=" + p.etcdData(),
			fmt.Sprintf("--listen-client-url=http://127.0.0.1:%d", p.ports.etcdClient),
			fmt.Sprintf("--listen-peer-url=http://127.0.0.1:%d", p.ports.etcdPeer),
		}
	case components.KubeAPIServer:
		c.Port, c.Ports = p.ports.apiserver, []int{p.ports.apiserver}
		c.HealthURL = p.server() + "/readyz"
		args = []string{
			fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", p.ports.etcdClient),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", p.ports.apiserver),
			"--tls-cert-file=" + p.pki("apiserver.crt"),
			"--tls-private-key-file=" + p.pki("apiserver.key"),
			"--cert-dir=" + p.certDir(name),
			"--client-ca-file=" + p.clientCA(p.role),
			"--token-auth-file=" + p.pki("tokens.csv"),
			"--service-account-issuer=https://" + p.name + ".flotilla.local",
			"--service-account-key-file=" + p.pki("sa.pub"),
			"--service-account-signing-key-file=" + p.pki("sa.key"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--authorization-mode=RBAC",
			"--allow-privileged=true",
			"--profiling=false",
		}
		if p.runsKwok() {
			// kwok is the nodes' kubelet, at the InternalIP it gives them.
			args = append(args, "--kubelet-preferred-address-types=InternalIP")
		}
		if p.runsMetrics() {
			args = append(args, p.aggregationArgs()...)
		}
	case components.KubeControllerManager:
		c.Port, c.Ports = p.ports.controllerManager, []int{p.ports.controllerManager}
		c.HealthURL = fmt.Sprintf("https://127.0.0.1:%d/healthz", p.ports.controllerManager)
		controllers := "*"
		if p.role == RoleHost {
			controllers = strings.Join(hostControllers, ",")
		}
		args = append(p.clientArgs(name, p.ports.controllerManager),
			"--controllers="+controllers,
			"--cluster-name="+p.name,
			"--root-ca-file="+p.caCert(),
			"--service-account-private-key-file="+p.pki("sa.key"),
			"--use-service-account-credentials=false",
			"--kube-api-qps=100",
			"--kube-api-burst=200",
		)
	case components.KubeScheduler:
		c.Port, c.Ports = p.ports.scheduler, []int{p.ports.scheduler}
		c.HealthURL = fmt.Sprintf("https://127.0.0.1:%d/healthz", p.ports.scheduler)
		args = p.clientArgs(name, p.ports.scheduler)
	case components.Kwok:
		c.Port, c.Ports = p.ports.kwok, []int{p.ports.kwok}
		c.HealthURL = fmt.Sprintf("https://127.0.0.1:%d/healthz", p.ports.kwok)
		args = []string{
			"--kubeconfig=" + p.kubeconfig(),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--node-lease-duration-seconds=40",
			fmt.Sprintf("--server-address=127.0.0.1:%d", p.ports.kwok),
			// The nodes' kubelet endpoint, which the member's apiserver
			// calls for logs, exec and port-forward (debugging.go).
			"--node-ip=127.0.0.1",
			fmt.Sprintf("--node-port=%d", p.ports.kwok),
			"--tls-cert-file=" + p.pki("kwok.crt"),
			"--tls-private-key-file=" + p.pki("kwok.key"),
			"--config=" + p.kwokDebugConfig(),
			fmt.Sprintf("--cidr=10.%d.0.0/16", 100+p.index%100),
		}
		for _, f := range p.kwokStageFiles(set) {
			args = append(args, "--config="+f)
		}
	case components.MetricsServer:
		c.Port, c.Ports = p.ports.metrics, []int{p.ports.metrics}
		c.HealthURL = fmt.Sprintf("https://127.0.0.1:%d/livez", p.ports.metrics)
		args = p.metricsServerArgs()
	}
	return c, args
}

// clientArgs are the flags kube-controller-manager and kube-scheduler share:
// the admin kubeconfig, loopback serving with a self-signed certificate, and
// no leader election (each runs once).
func (p clusterPlan) clientArgs(name string, port int) []string {
	return []string{
		"--kubeconfig=" + p.kubeconfig(),
		"--authentication-kubeconfig=" + p.kubeconfig(),
		"--authorization-kubeconfig=" + p.kubeconfig(),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + p.certDir(name),
		"--leader-elect=false",
	}
}
