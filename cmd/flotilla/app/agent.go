package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/pull"
)

// AgentOptions are the inputs of `flotilla agent`.
type AgentOptions struct {
	// Agent configures the agent (Hub and Member are filled by Run).
	Agent agent.Options
	// HubKubeconfig and HubContext locate the agent's fixed hub
	// credential (a token).
	HubKubeconfig, HubContext string
	// BootstrapKubeconfig locates the bootstrap credential, with which the
	// agent asks for its certificate.
	BootstrapKubeconfig string
	// Kubeconfig and Context locate the member (default: in-cluster).
	Kubeconfig, Context string
	// GatewayCAFile holds the CA the gateway's certificate is checked
	// against (default: the hub kubeconfig's).
	GatewayCAFile string
	// GatewayKubeconfig locates the member identity the gateway's
	// requests are forwarded with (default: the agent's own).
	GatewayKubeconfig string
	// Verbosity is the log verbosity (--v).
	Verbosity int
}

// NewAgentCmd returns `flotilla agent`.
func NewAgentCmd(_ Streams) *cobra.Command {
	o := &AgentOptions{Agent: agent.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "agent --cluster NAME (--bootstrap-kubeconfig FILE | --hub-kubeconfig FILE)",
		Short: "Run the agent of a pull-mode member cluster, inside (or beside) the member",
		Long: `Run the agent of a syncMode Pull member cluster.

The agent connects out to the hub: no credential of the member leaves the
member. On the hub it reads only the ClusterIntents in its cluster's
namespace (` + v1alpha1.ClusterNamespacePrefix + `NAME), reports on them in
their status, renews its heartbeat Lease there, and writes the member's
version, served kinds and capacity into its MemberCluster's status. In the
member it applies each intent with server-side apply (field manager
"flotilla"), reverts drift from a watch of the managed copies, deletes the
copy when the intent is deleted, and never touches an object Flotilla does
not manage unless the intent says to adopt it.

With --bootstrap-kubeconfig (written by ` + "`flotilla join --mode pull`" + `) the agent
first asks the hub for a client certificate (a CertificateSigningRequest
for signer ` + v1alpha1.SignerAgent + `, subject ` + v1alpha1.AgentUserPrefix + `NAME) and waits,
alive but not ready, until a hub admin accepts the cluster
(` + "`flotilla accept NAME`" + `) and the controller-manager signs it. It then works with
that certificate, keeps it in --cert-dir, and renews it at 80% of its
lifetime with the certificate itself, reconnecting with the new one; the
bootstrap credential is needed again only if the certificate expired.
A refused or expired credential, a denied request or a hub that does not
answer is logged with what to check and retried with back-off; nothing in
the member changes meanwhile. With --hub-kubeconfig it uses a fixed
credential instead (a token from join --agent-kubeconfig).

When the hub cannot be reached the agent keeps what it last applied and
keeps reverting drift; the hub marks the cluster Unknown once its
heartbeat is missed for the usual thresholds, and fails its workloads
over. When the hub returns, unchanged intents write nothing to the member.

With --gateway-url the agent also keeps a tunnel open to the federation's
gateway (` + "`flotilla gateway`" + `), presenting the same hub identity: the gateway
then serves this member's pods, events, nodes, endpointslices and
replicasets and routes a pod's logs, exec, attach, port-forward and
deletion to it. The agent forwards only those requests, with its own member
credentials, and refuses anything else (403); the gateway's users are
authorized by the hub's RBAC first.

With leader election (default, a Lease in the member's
--leader-election-namespace) several replicas may run; one works at a time.
/healthz and /readyz are served on --health-probe-bind-address, Prometheus
metrics on --metrics-bind-address.`,
		Example: `  # In the member, with the bootstrap kubeconfig from flotilla join --mode pull:
  flotilla agent --cluster edge-1 --bootstrap-kubeconfig /etc/flotilla/bootstrap.kubeconfig --cert-dir /var/lib/flotilla-agent

  # With a token kubeconfig from flotilla join --mode pull --agent-kubeconfig:
  flotilla agent --cluster edge-1 --hub-kubeconfig /etc/flotilla/hub.kubeconfig

  # Beside the member, for a test:
  flotilla agent --cluster edge-1 --hub-kubeconfig hub.kubeconfig --kubeconfig member.kubeconfig --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	a := &o.Agent
	fs.StringVar(&a.Cluster, "cluster", "", "the MemberCluster's name on the hub (required)")
	fs.StringVar(&o.HubKubeconfig, "hub-kubeconfig", "", "kubeconfig with a fixed credential of the agent for the hub (instead of --bootstrap-kubeconfig)")
	fs.StringVar(&o.HubContext, "hub-context", "", "context in the hub (or bootstrap) kubeconfig")
	fs.StringVar(&o.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with the bootstrap credential for the hub: the agent asks for its own certificate with it")
	fs.StringVar(&a.CertDir, "cert-dir", "", "with --bootstrap-kubeconfig: directory keeping the agent's certificate and key across restarts (default: memory only, so each start asks anew)")
	fs.DurationVar(&a.CertificateLifetime, "certificate-lifetime", a.CertificateLifetime, "with --bootstrap-kubeconfig: the certificate lifetime to ask for (at least 10m; the hub may give less)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the member (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.Context, "context", "", "context in the member kubeconfig")
	fs.BoolVar(&a.LeaderElect, "leader-elect", a.LeaderElect, "elect a leader among agent replicas (a Lease in the member)")
	fs.StringVar(&a.LeaderElectionNamespace, "leader-election-namespace", a.LeaderElectionNamespace, "member namespace of the leader election Lease")
	fs.StringVar(&a.LeaderElectionID, "leader-election-id", a.LeaderElectionID, "name of the leader election Lease")
	fs.StringVar(&a.Identity, "identity", a.Identity, "this agent's name in its heartbeat (default: the host name)")
	fs.StringVar(&a.MetricsAddr, "metrics-bind-address", a.MetricsAddr, "address serving Prometheus /metrics ('0' disables)")
	fs.StringVar(&a.ProbeAddr, "health-probe-bind-address", a.ProbeAddr, "address serving /healthz and /readyz ('0' disables; ':8091' for all interfaces, e.g. for kubelet probes)")
	fs.IntVar(&a.Workers, "concurrent-syncs", a.Workers, "intents applied in parallel")
	fs.Float32Var(&a.HubQPS, "hub-api-qps", a.HubQPS, "requests per second to the hub (reports and heartbeats)")
	fs.IntVar(&a.HubBurst, "hub-api-burst", a.HubBurst, "request burst to the hub")
	fs.Float32Var(&a.Session.ClientQPS, "kube-api-qps", a.Session.ClientQPS, "requests per second to the member's apiserver")
	fs.IntVar(&a.Session.ClientBurst, "kube-api-burst", a.Session.ClientBurst, "request burst to the member's apiserver")
	fs.DurationVar(&a.Heartbeat, "heartbeat-interval", a.Heartbeat, "time between renewals of the heartbeat Lease (the hub counts the agent silent after 12s without one)")
	fs.DurationVar(&a.Session.ProbeInterval, "probe-interval", a.Session.ProbeInterval, "time between health probes of the member's apiserver")
	fs.DurationVar(&a.Session.DiscoveryInterval, "discovery-interval", a.Session.DiscoveryInterval, "time between API discoveries of the member")
	fs.StringVar(&a.Gateway, "gateway-url", "", "URL of the federation's gateway (https://HOST:PORT): keep a tunnel open to it so that it serves this member's pods, logs and exec (default: none)")
	fs.StringVar(&o.GatewayCAFile, "gateway-ca-file", "", "with --gateway-url: CA bundle to check the gateway's certificate against (default: the hub kubeconfig's CA)")
	fs.StringVar(&o.GatewayKubeconfig, "gateway-kubeconfig", "", "with --gateway-url: member kubeconfig the gateway's requests are forwarded with; give one that may only read pods, events, nodes, endpointslices and replicasets, read pod logs, exec, attach, port-forward and delete pods (default: the agent's own member credential)")
	fs.StringSliceVar(&a.GatewayNoStreamsIn, "gateway-no-streams-in", nil, "with --gateway-url: namespaces the gateway may not exec, attach or port-forward into (default: kube-system and the agent's own namespace)")
	fs.IntVarP(&o.Verbosity, "v", "v", 0, "log verbosity")
	return cmd
}

// Validate refuses bad flag values before anything starts.
func (o *AgentOptions) Validate() error {
	a := o.Agent
	switch {
	case a.Cluster == "":
		return errors.New("--cluster is required: the name of this cluster's MemberCluster on the hub")
	case (o.HubKubeconfig == "") == (o.BootstrapKubeconfig == ""):
		return errors.New("give one of --bootstrap-kubeconfig (the agent asks for its certificate; from flotilla join --mode pull --bootstrap-kubeconfig) and --hub-kubeconfig (a fixed credential)")
	case a.CertDir != "" && o.BootstrapKubeconfig == "":
		return errors.New("--cert-dir needs --bootstrap-kubeconfig")
	case o.BootstrapKubeconfig != "" && a.CertificateLifetime < 10*time.Minute:
		return fmt.Errorf("--certificate-lifetime must be at least 10m (the hub refuses shorter requests), got %s", a.CertificateLifetime)
	case a.Heartbeat <= 0 || a.Heartbeat > pull.HeartbeatStale/2:
		return fmt.Errorf("--heartbeat-interval must be positive and at most %s (half the time after which the hub counts the agent silent), got %s", pull.HeartbeatStale/2, a.Heartbeat)
	case a.Session.ProbeInterval <= 0 || a.Session.DiscoveryInterval <= 0:
		return errors.New("--probe-interval and --discovery-interval must be positive")
	case a.Workers < 1:
		return errors.New("--concurrent-syncs must be at least 1")
	case a.HubQPS <= 0 || a.HubBurst < 1:
		return errors.New("--hub-api-qps must be positive and --hub-api-burst at least 1")
	case (o.GatewayCAFile != "" || o.GatewayKubeconfig != "" || a.GatewayNoStreamsIn != nil) && a.Gateway == "":
		return errors.New("--gateway-ca-file, --gateway-kubeconfig and --gateway-no-streams-in need --gateway-url")
	}
	if a.Gateway != "" {
		if u, err := url.Parse(a.Gateway); err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--gateway-url must be https://HOST[:PORT], got %q", a.Gateway)
		}
	}
	return nil
}

// Run loads both kubeconfigs and runs the agent until the command's
// context ends.
func (o *AgentOptions) Run(cmd *cobra.Command) error {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.Verbosity)))
	klog.SetLogger(logger)
	ctrl.SetLogger(logger)
	file, which := o.HubKubeconfig, "hub"
	if o.BootstrapKubeconfig != "" {
		file, which = o.BootstrapKubeconfig, "bootstrap"
	}
	hub, err := loadConfig(file, o.HubContext)
	if err != nil {
		return fmt.Errorf("load %s kubeconfig: %w", which, err)
	}
	hub.UserAgent = "flotilla-agent"
	mem, err := loadConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return fmt.Errorf("load member kubeconfig: %w", err)
	}
	mem.UserAgent = "flotilla-agent"
	o.Agent.Member = mem
	if o.GatewayKubeconfig != "" {
		gm, err := loadConfig(o.GatewayKubeconfig, "")
		if err != nil {
			return fmt.Errorf("load --gateway-kubeconfig: %w", err)
		}
		gm.UserAgent = "flotilla-agent/gateway"
		o.Agent.GatewayMember = gm
	}
	if o.GatewayCAFile != "" {
		if o.Agent.GatewayCA, err = os.ReadFile(o.GatewayCAFile); err != nil {
			return fmt.Errorf("--gateway-ca-file: %w", err)
		}
	}
	if o.BootstrapKubeconfig != "" {
		o.Agent.Bootstrap = hub
	} else {
		o.Agent.Hub = hub
	}
	return agent.Run(klog.NewContext(cmd.Context(), logger), o.Agent)
}
