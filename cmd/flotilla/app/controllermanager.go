package app

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/admission"
	"github.com/flotilla-io/flotilla/internal/manager"
	"github.com/flotilla-io/flotilla/internal/memlimit"
)

// ControllerManagerOptions are the inputs of `flotilla controller-manager`.
type ControllerManagerOptions struct {
	// Manager configures the controllers and the manager running them.
	Manager manager.Options
	// Kubeconfig and Context locate the host control plane.
	Kubeconfig, Context string
	// Verbosity is the log verbosity (--v).
	Verbosity int
	// RestartOnLostLease makes a leader that lost its lease start afresh in
	// the same process instead of exiting.
	RestartOnLostLease bool
	// MemoryLimit is --memory-limit: the Go runtime's soft memory limit
	// ("" or "0": GOMEMLIMIT, else 90% of the container's limit).
	MemoryLimit string

	memoryLimit int64
}

// NewControllerManagerCmd returns `flotilla controller-manager`.
func NewControllerManagerCmd(streams Streams) *cobra.Command {
	o := &ControllerManagerOptions{Manager: manager.DefaultOptions(), RestartOnLostLease: true}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the Flotilla controllers against the host control plane",
		Long: `Run the Flotilla controllers against the host control plane's apiserver.

On start it creates the flotilla.io CRDs the host lacks and the
flotilla-system namespace; once it is the leader it upgrades existing CRDs
that differ from its own (--install-crds; a standby never changes them).
With leader election (default) several replicas may run; one works at a
time. /healthz and /readyz are served on --health-probe-bind-address,
Prometheus metrics on --metrics-bind-address (over HTTPS with
authentication and authorization by the host with --metrics-secure), and
Go profiles on --pprof-bind-address when it is set. All listen on
127.0.0.1 only unless told otherwise.

Members are reached only with a Secret bound to their MemberCluster (owner
reference or label flotilla.io/member-cluster), only over verified TLS unless
--allow-insecure-members is set, and only once the member's flotilla-system
namespace records this control plane and MemberCluster as its owner (the
controller records it in an unclaimed member, and refuses a member claimed
by another control plane or MemberCluster).

Pull members' agents get client certificates from the agent-signer
controller (signer ` + v1alpha1.SignerAgent + `) once a hub admin accepts their
MemberCluster; it runs when --agent-signing-cert-file and
--agent-signing-key-file name a CA the host apiserver trusts for client
certificates. The leader installs the admission policy ` + admission.AcceptGuardName + `,
which lets only users allowed to update memberclusters/accept change
spec.accepted.

SIGINT, SIGTERM or SIGHUP (unless started with it ignored, as by nohup)
stops it gracefully and releases the leader lease; a second signal ends it
at once. A
leader that loses its lease (the host apiserver did not answer its renewals
within --leader-elect-renew-deadline) stops its controllers and starts
afresh in the same process, waits for the host apiserver and stands for
election again (--restart-on-lost-lease=false exits with an error instead,
for a supervisor to restart it).

Controllers: ` + strings.Join(manager.ControllerNames(), ", ") + `.`,
		Example: `  flotilla controller-manager --kubeconfig host.kubeconfig
  flotilla controller-manager --kubeconfig host.kubeconfig --controllers '*,-cluster' --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	m := &o.Manager
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the host control plane (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context to use")
	fs.StringSliceVar(&m.Controllers, "controllers", m.Controllers, "controllers to run: '*' for all, 'name' to enable, '-name' to disable (known: "+strings.Join(manager.ControllerNames(), ", ")+")")
	fs.BoolVar(&m.InstallCRDs, "install-crds", m.InstallCRDs, "create missing flotilla.io CRDs on start, and upgrade existing ones once leader (false: manage them yourself, e.g. kubectl apply --server-side -f config/crd/bases)")
	fs.BoolVar(&m.DeletionProtection, "deletion-protection", m.DeletionProtection, "once leader, install the admission policy "+admission.DeletionProtectionName+" that refuses to delete host objects annotated "+v1alpha1.AnnotationDeletionProtection+"=true (false: apply config/admission/deletion-protection.yaml yourself, or go without)")
	fs.BoolVar(&m.ScaleDownProtection, "scale-down-protection", m.ScaleDownProtection, "once leader, install the admission policy "+admission.ScaleDownProtectionName+" that refuses a replicas change removing more than flotilla.io/scale-down-limit percent of a workload (set on it or its namespace) at once, unless flotilla.io/scale-down-to names the target (false: apply config/admission/scale-down-protection.yaml yourself, or go without)")
	fs.BoolVar(&m.LeaderElect, "leader-elect", m.LeaderElect, "elect a leader so that only one replica runs the controllers")
	fs.StringVar(&m.LeaderElectionNamespace, "leader-election-namespace", m.LeaderElectionNamespace, "namespace of the leader election Lease")
	fs.StringVar(&m.LeaderElectionID, "leader-election-id", m.LeaderElectionID, "name of the leader election Lease")
	fs.StringVar(&m.LeaderElectionIdentity, "leader-elect-identity", m.LeaderElectionIdentity, "this replica's name in the Lease (default: host name and a random suffix, new each start); a stable name, such as the pod's, lets a restarted process resume its lease at once instead of waiting it out; never give two running replicas the same one")
	fs.DurationVar(&m.LeaseDuration, "leader-elect-lease-duration", m.LeaseDuration, "how long a leader's lease lasts without renewal")
	fs.DurationVar(&m.RenewDeadline, "leader-elect-renew-deadline", m.RenewDeadline, "how long the leader retries renewing before giving up")
	fs.DurationVar(&m.RetryPeriod, "leader-elect-retry-period", m.RetryPeriod, "time between leader election attempts")
	fs.StringVar(&m.MetricsAddr, "metrics-bind-address", m.MetricsAddr, "address serving Prometheus /metrics ('0' disables; ':8080' for all interfaces, then add --metrics-secure)")
	fs.BoolVar(&m.MetricsSecure, "metrics-secure", m.MetricsSecure, "serve /metrics over HTTPS to callers the host authenticates and authorizes (get on the non-resource URL /metrics)")
	fs.StringVar(&m.MetricsCertDir, "metrics-cert-dir", m.MetricsCertDir, "directory with tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)")
	fs.IntVar(&m.WebhookPort, "webhook-port", m.WebhookPort, "port of the admission webhook server that validates WorkloadInterpreters (0: none; they are then checked only after they are stored, and a broken one shows Ready=False)")
	fs.StringVar(&m.WebhookHost, "webhook-bind-host", m.WebhookHost, "address the webhook server binds (default: every interface)")
	fs.StringVar(&m.WebhookCertDir, "webhook-cert-dir", m.WebhookCertDir, "directory with the webhook server's tls.crt and tls.key")
	fs.StringVar(&m.WebhookURL, "webhook-url", m.WebhookURL, "https URL at which the host apiserver reaches the webhook server; with --webhook-ca-file the leader installs the ValidatingWebhookConfiguration "+manager.InterpreterWebhookName+" (empty: install it yourself)")
	fs.StringVar(&m.WebhookCAFile, "webhook-ca-file", m.WebhookCAFile, "CA bundle that signs the webhook server's certificate, for the host apiserver")
	fs.StringVar(&m.ProbeAddr, "health-probe-bind-address", m.ProbeAddr, "address serving /healthz and /readyz ('0' disables; ':8081' for all interfaces, e.g. for kubelet probes)")
	fs.StringVar(&m.PprofAddr, "pprof-bind-address", m.PprofAddr, "address serving the Go profiler's /debug/pprof/ endpoints ('0' disables; keep it on a loopback address)")
	fs.StringVar(&m.CredentialsNamespace, "credentials-namespace", m.CredentialsNamespace, "namespace of the member credentials Secrets")
	fs.IntVar(&m.ConcurrentClusterSyncs, "concurrent-cluster-syncs", m.ConcurrentClusterSyncs, "MemberClusters reconciled in parallel")
	fs.IntVar(&m.ConcurrentPropagationSyncs, "concurrent-propagation-syncs", m.ConcurrentPropagationSyncs, "FederatedObjects propagated in parallel (each writes to its clusters in parallel)")
	fs.IntVar(&m.ConcurrentSyncs, "concurrent-syncs", m.ConcurrentSyncs, "objects reconciled in parallel by each of the federate, schedule, rollout and status controllers")
	fs.DurationVar(&m.RolloutStallAfter, "rollout-stall-after", m.RolloutStallAfter, "how long a cluster rolling in a federated rollout may be not Ready before its share of maxSurge/maxUnavailable goes to the other clusters")
	fs.BoolVar(&m.DisableSimulatedScheduling, "disable-simulated-scheduling", m.DisableSimulatedScheduling, "judge members by their status.resources sums only: no per-node estimate of how many replicas fit (ResourceFit, WaterLevel, Binpack) and no ledger of reservations")
	fs.DurationVar(&m.ReservationTimeout, "scheduler-reservation-timeout", m.ReservationTimeout, "how long the scheduler's ledger reserves a member's room for replicas a decision placed there that have no pod bound to a node yet")
	fs.Float32Var(&m.HostQPS, "kube-api-qps", m.HostQPS, "requests per second to the host apiserver (negative: no client-side limit)")
	fs.IntVar(&m.HostBurst, "kube-api-burst", m.HostBurst, "request burst to the host apiserver")
	fs.Float32Var(&m.Cluster.ClientQPS, "member-api-qps", m.Cluster.ClientQPS, "requests per second to each member apiserver (negative: no client-side limit)")
	fs.IntVar(&m.Cluster.ClientBurst, "member-api-burst", m.Cluster.ClientBurst, "request burst to each member apiserver")
	fs.DurationVar(&m.TemplateDiscoveryInterval, "template-discovery-interval", m.TemplateDiscoveryInterval, "how often the host's kinds are rediscovered for propagation (a CRD change triggers it at once)")
	fs.DurationVar(&m.Cluster.ProbeInterval, "cluster-probe-interval", m.Cluster.ProbeInterval, "time between health probes of each member")
	fs.DurationVar(&m.Cluster.ProbeTimeout, "cluster-probe-timeout", m.Cluster.ProbeTimeout, "time a member has to answer a health probe")
	fs.DurationVar(&m.Cluster.FailureThreshold, "cluster-failure-threshold", m.Cluster.FailureThreshold, "how long a member must keep failing probes before it is marked not Ready")
	fs.DurationVar(&m.Cluster.SuccessThreshold, "cluster-success-threshold", m.Cluster.SuccessThreshold, "how long a member must keep passing probes before it is marked Ready again")
	fs.DurationVar(&m.Cluster.DiscoveryInterval, "cluster-discovery-interval", m.Cluster.DiscoveryInterval, "time between API discoveries of each member")
	fs.BoolVar(&m.Failover.Disabled, "disable-cluster-failover", m.Failover.Disabled, "never taint members NoExecute: objects stay on members that are not Ready")
	fs.DurationVar(&m.Failover.GracePeriod, "cluster-failover-grace-period", m.Failover.GracePeriod, "how long a member stays not Ready (tainted NoSchedule) before it is tainted NoExecute and objects that do not tolerate it move away")
	fs.Float64Var(&m.Failover.DisruptionThreshold, "cluster-failover-disruption-threshold", m.Failover.DisruptionThreshold, "fraction of failure domains (zones, else regions) disrupted above which nothing is evicted (the control plane's own connectivity is suspected)")
	fs.Float64Var(&m.Failover.UnhealthyZoneThreshold, "unhealthy-zone-threshold", m.Failover.UnhealthyZoneThreshold, "fraction of a failure domain's members not Ready (at least two) from which the domain is partially disrupted: none of its members is evicted until it is Normal or fully down")
	fs.IntVar(&m.Failover.SmallFederationSize, "small-federation-size", m.Failover.SmallFederationSize, "a federation of fewer members waits --small-federation-grace-period before evicting a member (0 turns the rule off)")
	fs.DurationVar(&m.Failover.SmallFederationGracePeriod, "small-federation-grace-period", m.Failover.SmallFederationGracePeriod, "grace period before a member not Ready is tainted NoExecute in a federation of fewer than --small-federation-size members")
	fs.Float64Var(&m.Failover.ClustersPerMinute, "eviction-clusters-per-minute", m.Failover.ClustersPerMinute, "member clusters tainted NoExecute a minute at most, federation-wide (0: no limit)")
	fs.Float64Var(&m.Failover.ObjectsPerMinutePerCluster, "eviction-objects-per-minute-per-cluster", m.Failover.ObjectsPerMinutePerCluster, "objects moved a minute at most off one member cluster tainted NoExecute for not being Ready, with a burst of ten seconds' worth (0: no limit)")
	fs.BoolVar(&m.AllowInsecureMembers, "allow-insecure-members", m.AllowInsecureMembers, "for tests only: connect to members with an http:// apiEndpoint or tls.insecureSkipVerify, reported loudly (InsecureTransport condition, Warning event, log line, flotilla_member_cluster_insecure metric); by default they are refused (Ready=False, reason InsecureEndpoint)")
	fs.StringVar(&m.AgentSigningCertFile, "agent-signing-cert-file", m.AgentSigningCertFile, "PEM CA certificate that signs pull agents' client certificates (signer "+v1alpha1.SignerAgent+"); the host apiserver must trust it for client certificates (its --client-ca-file bundle). Without it pull agents stay pending")
	fs.StringVar(&m.AgentSigningKeyFile, "agent-signing-key-file", m.AgentSigningKeyFile, "PEM private key of --agent-signing-cert-file")
	fs.DurationVar(&m.AgentCertificateLifetime, "agent-certificate-lifetime", m.AgentCertificateLifetime, "longest lifetime of a pull agent's certificate (agents renew at 80% of it; shorter if the agent asks)")
	fs.DurationVar(&m.GracefulShutdown, "graceful-shutdown-timeout", m.GracefulShutdown, "how long to wait for controllers to stop")
	fs.BoolVar(&o.RestartOnLostLease, "restart-on-lost-lease", o.RestartOnLostLease, "when this replica loses its leader lease, start afresh in the same process (same pid and log), wait for the host apiserver and stand for election again; false: exit with an error")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, "soft memory limit of the Go runtime (a quantity such as 2Gi; the garbage collector works harder as the heap nears it). Default: GOMEMLIMIT if set, else 90% of the container's (cgroup) memory limit, else none")
	fs.IntVarP(&o.Verbosity, "v", "v", 0, "log verbosity")
	return cmd
}

// Validate refuses bad flag values before anything starts.
func (o *ControllerManagerOptions) Validate() error {
	if _, err := manager.Enabled(o.Manager.Controllers, manager.ControllerNames()); err != nil {
		return err
	}
	c := o.Manager.Cluster
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"--cluster-probe-interval", c.ProbeInterval}, {"--cluster-probe-timeout", c.ProbeTimeout},
		{"--cluster-discovery-interval", c.DiscoveryInterval},
		{"--cluster-failure-threshold", c.FailureThreshold}, {"--cluster-success-threshold", c.SuccessThreshold},
		{"--leader-elect-lease-duration", o.Manager.LeaseDuration}, {"--leader-elect-renew-deadline", o.Manager.RenewDeadline},
		{"--leader-elect-retry-period", o.Manager.RetryPeriod},
	} {
		if f.d <= 0 {
			return fmt.Errorf("%s must be positive, got %s", f.name, f.d)
		}
	}
	if (o.Manager.AgentSigningCertFile == "") != (o.Manager.AgentSigningKeyFile == "") {
		return fmt.Errorf("--agent-signing-cert-file and --agent-signing-key-file go together")
	}
	if o.Manager.AgentCertificateLifetime < 10*time.Second {
		return fmt.Errorf("--agent-certificate-lifetime must be at least 10s, got %s", o.Manager.AgentCertificateLifetime)
	}
	if o.Manager.ConcurrentClusterSyncs < 1 {
		return fmt.Errorf("--concurrent-cluster-syncs must be at least 1")
	}
	if o.Manager.ReservationTimeout <= 0 {
		return fmt.Errorf("--scheduler-reservation-timeout must be positive")
	}
	if o.Manager.RolloutStallAfter <= 0 {
		return fmt.Errorf("--rollout-stall-after must be positive")
	}
	if o.Manager.ConcurrentSyncs < 1 {
		return fmt.Errorf("--concurrent-syncs must be at least 1")
	}
	if o.Manager.HostBurst < 1 || o.Manager.Cluster.ClientBurst < 1 {
		return fmt.Errorf("--kube-api-burst and --member-api-burst must be at least 1")
	}
	if o.Manager.ConcurrentPropagationSyncs < 1 {
		return fmt.Errorf("--concurrent-propagation-syncs must be at least 1")
	}
	if o.Manager.Failover.GracePeriod <= 0 {
		return fmt.Errorf("--cluster-failover-grace-period must be positive, got %s", o.Manager.Failover.GracePeriod)
	}
	if t := o.Manager.Failover.DisruptionThreshold; t <= 0 || t > 1 {
		return fmt.Errorf("--cluster-failover-disruption-threshold must be in (0, 1], got %g", t)
	}
	if t := o.Manager.Failover.UnhealthyZoneThreshold; t <= 0 || t > 1 {
		return fmt.Errorf("--unhealthy-zone-threshold must be in (0, 1], got %g", t)
	}
	if o.Manager.Failover.SmallFederationSize < 0 {
		return fmt.Errorf("--small-federation-size must not be negative, got %d", o.Manager.Failover.SmallFederationSize)
	}
	if o.Manager.Failover.SmallFederationGracePeriod < 0 {
		return fmt.Errorf("--small-federation-grace-period must not be negative, got %s", o.Manager.Failover.SmallFederationGracePeriod)
	}
	if o.Manager.Failover.ClustersPerMinute < 0 || o.Manager.Failover.ObjectsPerMinutePerCluster < 0 {
		return fmt.Errorf("--eviction-clusters-per-minute and --eviction-objects-per-minute-per-cluster must not be negative (0: no limit)")
	}
	if o.Manager.TemplateDiscoveryInterval <= 0 {
		return fmt.Errorf("--template-discovery-interval must be positive")
	}
	if err := validateWebhook(o.Manager); err != nil {
		return err
	}
	if o.Manager.MetricsCertDir != "" && !o.Manager.MetricsSecure {
		return fmt.Errorf("--metrics-cert-dir needs --metrics-secure")
	}
	if o.MemoryLimit != "" {
		q, err := resource.ParseQuantity(o.MemoryLimit)
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("--memory-limit must be a non-negative quantity such as 2Gi, got %q", o.MemoryLimit)
		}
		o.memoryLimit = q.Value()
	}
	if o.Manager.LeaderElect && o.Manager.RenewDeadline >= o.Manager.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s)", o.Manager.RenewDeadline, o.Manager.LeaseDuration)
	}
	return nil
}

// Run sets up logging, loads the host kubeconfig and runs the manager until
// the command's context ends.
func (o *ControllerManagerOptions) Run(cmd *cobra.Command) error {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.Verbosity)))
	klog.SetLogger(logger)
	ctrl.SetLogger(logger)
	cfg, err := loadConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return fmt.Errorf("load host kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.Manager.HostQPS, o.Manager.HostBurst
	cfg.UserAgent = "flotilla-controller-manager"
	ctx := klog.NewContext(cmd.Context(), logger)
	mem, err := memlimit.Set(o.memoryLimit, memlimit.DefaultFraction)
	if err != nil {
		logger.Error(err, "Reading the container's memory limit")
	}
	logger.Info("Memory limit", "bytes", mem.Limit, "source", mem.Source)
	if reason := os.Getenv(manager.EnvRestarted); reason != "" {
		logger.Info("Restarted", "reason", reason)
		if err := manager.WaitForHost(ctx, cfg, time.Second); err != nil {
			return err
		}
	}
	err = manager.Run(ctx, cfg, o.Manager)
	if errors.Is(err, manager.ErrLeaseLost) && o.RestartOnLostLease && ctx.Err() == nil {
		logger.Info("Lost the leader lease: starting afresh", "err", err.Error())
		return manager.Restart("lost the leader lease")
	}
	return err
}

// validateWebhook checks the webhook flags belong together.
func validateWebhook(m manager.Options) error {
	switch {
	case m.WebhookPort < 0 || m.WebhookPort > 65535:
		return fmt.Errorf("--webhook-port must be 0 (none) or a port, got %d", m.WebhookPort)
	case m.WebhookPort == 0 && (m.WebhookCertDir != "" || m.WebhookURL != "" || m.WebhookCAFile != ""):
		return fmt.Errorf("--webhook-cert-dir, --webhook-url and --webhook-ca-file need --webhook-port")
	case m.WebhookPort != 0 && m.WebhookCertDir == "":
		return fmt.Errorf("--webhook-port needs --webhook-cert-dir (tls.crt and tls.key the host apiserver can verify)")
	case (m.WebhookURL == "") != (m.WebhookCAFile == ""):
		return fmt.Errorf("--webhook-url and --webhook-ca-file go together")
	case m.WebhookURL != "" && !strings.HasPrefix(m.WebhookURL, "https://"):
		return fmt.Errorf("--webhook-url must be an https:// URL, got %q", m.WebhookURL)
	}
	return nil
}
