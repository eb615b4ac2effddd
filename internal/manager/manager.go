// Package manager runs the flotilla controller-manager: it creates the
// CRDs the host lacks, then starts the enabled controllers under one
// controller-runtime manager with leader election, health probes and
// Prometheus metrics; the leader alone upgrades existing CRDs.
package manager

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/admission"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/agentcert"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/interpreters"
	"github.com/flotilla-io/flotilla/internal/controller/rollout"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Permissions of the manager itself (leader election and its events, its
// namespace, the CRDs). The namespaced rules assume the default
// flotilla-system for --leader-election-namespace and
// --credentials-namespace. CRDs may be updated only by name, Flotilla's own
// (updating another's could point its conversion webhook anywhere).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=flotilla-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=update,resourceNames=clusterintents.flotilla.io;clusteroverridepolicies.flotilla.io;clusterpropagationpolicies.flotilla.io;federatedobjects.flotilla.io;memberclusters.flotilla.io;overridepolicies.flotilla.io;propagationpolicies.flotilla.io;schedulerpluginwebhooks.flotilla.io;schedulingprofiles.flotilla.io;workloadinterpreters.flotilla.io

// Options configure the controller-manager.
type Options struct {
	// Controllers is the --controllers list ("*" for all).
	Controllers []string
	// InstallCRDs creates the missing CRDs on start and, once this replica
	// leads, upgrades those that differ from this binary's.
	InstallCRDs bool
	// DeletionProtection installs, once this replica leads, the admission
	// policy that refuses to delete host objects annotated
	// flotilla.io/deletion-protection: "true".
	DeletionProtection bool
	// ScaleDownProtection installs, once this replica leads, the admission
	// policy that refuses large scale-downs of workloads that set
	// flotilla.io/scale-down-limit (config/admission).
	ScaleDownProtection bool
	// LeaderElect enables leader election, so that only one replica runs
	// the controllers.
	LeaderElect bool
	// RunsAgain lets Run be called again in the same process once an
	// earlier Run has returned (tests that restart the controller-manager):
	// controller names then need not be unique in the process.
	RunsAgain bool
	// LeaderElectionNamespace and LeaderElectionID name the Lease.
	LeaderElectionNamespace, LeaderElectionID string
	// LeaderElectionIdentity names this replica in the Lease ("": the
	// host name and a random suffix, new for every process). A process
	// that finds the Lease held under its own identity takes it at once,
	// so a stable identity lets a restarted process (a container
	// restarted in its pod) resume without waiting out its predecessor's
	// lease. Two replicas running at the same time must never share one.
	LeaderElectionIdentity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr serves /metrics ("0" disables; default loopback only).
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS, to callers the host
	// authenticates (TokenReview) and authorizes (SubjectAccessReview of
	// get on the path).
	MetricsSecure bool
	// MetricsCertDir holds the HTTPS certificate (tls.crt, tls.key) of
	// MetricsSecure; a self-signed one is used when it is absent.
	MetricsCertDir string
	// WebhookPort serves the admission webhook that validates
	// WorkloadInterpreters (0: none; they are then checked only by the
	// loader, which reports a condition).
	WebhookPort int
	// WebhookHost is the address the webhook server binds (default: all).
	WebhookHost string
	// WebhookCertDir holds the webhook's serving certificate (tls.crt,
	// tls.key).
	WebhookCertDir string
	// WebhookURL is how the host apiserver reaches the webhook server
	// (https://...); with WebhookCAFile, the leader installs the
	// ValidatingWebhookConfiguration.
	WebhookURL string
	// WebhookCAFile is the CA bundle that signs the webhook's certificate.
	WebhookCAFile string
	// ProbeAddr serves /healthz and /readyz ("0" disables; default
	// loopback only).
	ProbeAddr string
	// PprofAddr serves the Go profiler's /debug/pprof/ endpoints ("0", the
	// default, disables them).
	PprofAddr string
	// CredentialsNamespace holds the member credentials Secrets.
	CredentialsNamespace string
	// Cluster tunes the cluster controller's member sessions.
	Cluster member.Options
	// Failover tunes cluster failover (NoExecute taints on members that
	// stay not Ready).
	Failover cluster.Failover
	// AllowInsecureMembers lets the cluster controller reach members over
	// plain http or without verifying their serving certificate (reported
	// loudly); by default such members are refused.
	AllowInsecureMembers bool
	// AgentSigningCertFile and AgentSigningKeyFile are the CA that signs
	// pull agents' client certificates (signer flotilla.io/agent); the
	// host apiserver must trust it for client certificates. Without them
	// the agent-signer controller does not run and agents stay pending.
	AgentSigningCertFile, AgentSigningKeyFile string
	// AgentCertificateLifetime caps the lifetime of the agents'
	// certificates (agents renew at 80% of it).
	AgentCertificateLifetime time.Duration
	// ConcurrentClusterSyncs bounds parallel MemberCluster reconciles.
	ConcurrentClusterSyncs int
	// ConcurrentSyncs bounds parallel reconciles of the federate, schedule,
	// rollout and status controllers.
	ConcurrentSyncs int
	// HostQPS and HostBurst limit the requests to the host (a negative QPS
	// removes the limit).
	HostQPS   float32
	HostBurst int
	// ConcurrentPropagationSyncs bounds parallel FederatedObject
	// propagations (each writes to its clusters in parallel).
	ConcurrentPropagationSyncs int
	// RolloutStallAfter is how long a cluster rolling in a federated
	// rollout may be not Ready before its share of the budget goes back
	// to the others.
	RolloutStallAfter time.Duration
	// DisableSimulatedScheduling makes the scheduler judge members by their
	// status.resources sums only, without node-level estimates or the
	// ledger of reservations.
	DisableSimulatedScheduling bool
	// ReservationTimeout is how long the ledger holds the room of replicas
	// a decision placed that have not started.
	ReservationTimeout time.Duration
	// TemplateDiscoveryInterval is how often the host's kinds are
	// rediscovered (a CRD change triggers it at once).
	TemplateDiscoveryInterval time.Duration
	// GracefulShutdown bounds the wait for controllers to stop.
	GracefulShutdown time.Duration
}

// Default listen addresses: loopback only, so that nothing is reachable
// from other hosts unless the operator says so.
const (
	DefaultMetricsAddr = "127.0.0.1:8080"
	DefaultProbeAddr   = "127.0.0.1:8081"
)

// DefaultOptions are the defaults of the controller-manager's flags.
func DefaultOptions() Options {
	return Options{
		Controllers:                []string{"*"},
		InstallCRDs:                true,
		DeletionProtection:         true,
		ScaleDownProtection:        true,
		LeaderElect:                true,
		LeaderElectionNamespace:    v1alpha1.SystemNamespace,
		LeaderElectionID:           "flotilla-controller-manager",
		LeaseDuration:              15 * time.Second,
		RenewDeadline:              10 * time.Second,
		RetryPeriod:                2 * time.Second,
		MetricsAddr:                DefaultMetricsAddr,
		ProbeAddr:                  DefaultProbeAddr,
		PprofAddr:                  "0",
		CredentialsNamespace:       v1alpha1.SystemNamespace,
		Cluster:                    member.DefaultOptions(),
		Failover:                   cluster.DefaultFailover(),
		ConcurrentClusterSyncs:     4,
		AgentCertificateLifetime:   agentcert.DefaultLifetime,
		ConcurrentPropagationSyncs: 16,
		ConcurrentSyncs:            8,
		HostQPS:                    1000,
		HostBurst:                  2000,
		TemplateDiscoveryInterval:  30 * time.Second,
		RolloutStallAfter:          rollout.DefaultStallAfter,
		ReservationTimeout:         ledger.DefaultTimeout,
		GracefulShutdown:           30 * time.Second,
	}
}

// Run creates the missing CRDs (if asked), then runs the enabled
// controllers until ctx ends; the leader upgrades the existing CRDs. A
// leader that loses its lease stops and returns ErrLeaseLost.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	logger := ctrl.LoggerFrom(ctx)
	enabled, err := Enabled(opts.Controllers, ControllerNames())
	if err != nil {
		return err
	}
	if err := PrepareHost(ctx, cfg, opts); err != nil {
		return err
	}
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	shared, err := NewShared(ctx, mgr, cfg, opts)
	if err != nil {
		return err
	}
	shared.Rollouts = enabled[rollout.Name]
	for _, c := range Controllers {
		if !enabled[c.Name] {
			logger.Info("Controller disabled", "controller", c.Name)
			continue
		}
		if err := c.Setup(mgr, opts, shared); err != nil {
			return fmt.Errorf("set up controller %s: %w", c.Name, err)
		}
		logger.Info("Controller enabled", "controller", c.Name)
	}
	for _, w := range ExposureWarnings(opts) {
		logger.Info("Warning: " + w)
	}
	logger.Info("Starting controller-manager", "leaderElection", opts.LeaderElect, "metrics", opts.MetricsAddr, "metricsSecure", opts.MetricsSecure, "probes", opts.ProbeAddr)
	return classify(mgr.Start(ctx))
}

// New builds the manager without controllers (with the leader's CRD
// upgrade when opts.InstallCRDs). Secrets are cached only in the
// credentials namespace.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	scheme, err := hostscheme.New()
	if err != nil {
		return nil, err
	}
	lock, err := leaseLock(cfg, opts)
	if err != nil {
		return nil, err
	}
	metrics := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.MetricsSecure {
		metrics = secureMetrics(opts.MetricsAddr, opts.MetricsCertDir)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {Namespaces: map[string]cache.Config{opts.CredentialsNamespace: {}}},
			},
			// No controller reads managed fields, and a FederatedObject
			// carries one entry per status writer (about a third of it).
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Metrics:                             metrics,
		HealthProbeBindAddress:              opts.ProbeAddr,
		PprofBindAddress:                    opts.PprofAddr,
		LeaderElection:                      opts.LeaderElect,
		LeaderElectionNamespace:             opts.LeaderElectionNamespace,
		LeaderElectionID:                    opts.LeaderElectionID,
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &opts.LeaseDuration,
		RenewDeadline:                       &opts.RenewDeadline,
		RetryPeriod:                         &opts.RetryPeriod,
		GracefulShutdownTimeout:             &opts.GracefulShutdown,
		// Controllers start their host watches before this replica holds
		// the lease (they reconcile only once it does), so a replica that
		// takes over, a standby or a restarted process, lists the host
		// while the previous holder's lease runs out, not after.
		Controller:    config.Controller{EnableWarmup: ptr.To(true), SkipNameValidation: ptr.To(opts.RunsAgain)},
		WebhookServer: webhookServer(opts),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if opts.InstallCRDs {
		if err := mgr.Add(crdUpgrader{cfg: cfg, logger: mgr.GetLogger().WithName("crds")}); err != nil {
			return nil, fmt.Errorf("add the CRD upgrade: %w", err)
		}
	}
	sets := []admission.Set{admission.AcceptGuard}
	if opts.DeletionProtection {
		sets = append(sets, admission.DeletionProtection)
	}
	if opts.ScaleDownProtection {
		sets = append(sets, admission.ScaleDownProtection)
	}
	if err := mgr.Add(admissionInstaller{cfg: cfg, sets: sets, logger: mgr.GetLogger().WithName("admission")}); err != nil {
		return nil, fmt.Errorf("add the admission policy install: %w", err)
	}
	if err := addInterpreterWebhook(mgr, opts); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informers not synced")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	return mgr, nil
}

// NewShared builds what the controllers share and adds the template cache
// and the FederatedObject indexes to mgr.
func NewShared(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, opts Options) (*Shared, error) {
	tc, err := templates.New(cfg, opts.TemplateDiscoveryInterval)
	if err != nil {
		return nil, err
	}
	if err := watchSecretsOnDemand(ctx, mgr, tc); err != nil {
		return nil, err
	}
	if err := mgr.Add(tc); err != nil {
		return nil, fmt.Errorf("add the template cache: %w", err)
	}
	if err := fedobj.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("FederatedObject indexes: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic host client: %w", err)
	}
	// Custom kinds are read through their WorkloadInterpreters from the
	// first reconcile on: templates are not served until the loader has
	// compiled every interpreter, and a changed interpreter makes the
	// controllers look at its kind's objects again.
	loader := interpreters.NewLoader(mgr.GetCache(), mgr.GetAPIReader(), mgr.GetRESTMapper(), workload.Interpreters)
	if err := mgr.Add(loader); err != nil {
		return nil, fmt.Errorf("add the workload interpreter loader: %w", err)
	}
	tc.RequireAlso(loader.Synced())
	workload.Interpreters.Subscribe(tc.Touch)
	shared := &Shared{Pool: member.NewPool(), Templates: tc, Dynamic: dyn, Interpreters: loader}
	if !opts.DisableSimulatedScheduling {
		shared.Ledger = &ledger.Ledger{Timeout: opts.ReservationTimeout}
		ledger.Expose(shared.Ledger)
	}
	return shared, nil
}

// PrepareHost creates the CRDs the host lacks (without touching existing
// ones: this replica may be a standby of another version) and the system
// namespaces the manager uses.
func PrepareHost(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.InstallCRDs {
		res, err := crd.Ensure(ctx, cfg, crd.CreateMissing)
		if err != nil {
			return err
		}
		if len(res.Created) > 0 {
			ctrl.LoggerFrom(ctx).Info("Created missing flotilla.io CRDs", "crds", res.Created)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("host client: %w", err)
	}
	// flotilla-system also holds the FederatedObjects of cluster-scoped
	// objects.
	// Read first, so that a restart writes nothing.
	for _, ns := range slices.Compact(slices.Sorted(slices.Values([]string{opts.CredentialsNamespace, opts.LeaderElectionNamespace, v1alpha1.SystemNamespace}))) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("read namespace %s: %w", ns, err)
		}
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return nil
}

// ExposureWarnings says which endpoints opts serve beyond the loopback
// interface without authentication: the operator chose it, but it should
// be deliberate.
func ExposureWarnings(opts Options) []string {
	var out []string
	if !opts.MetricsSecure && !loopback(opts.MetricsAddr) {
		out = append(out, fmt.Sprintf("--metrics-bind-address=%s serves metrics over plain HTTP without authentication beyond this host; add --metrics-secure", opts.MetricsAddr))
	}
	if opts.PprofAddr != "" && !loopback(opts.PprofAddr) {
		out = append(out, fmt.Sprintf("--pprof-bind-address=%s serves Go profiles without authentication beyond this host", opts.PprofAddr))
	}
	return out
}

// loopback reports whether addr ("host:port") listens on a loopback
// address only, or is "0" (disabled). An empty host or a name other than
// localhost may listen on every interface.
func loopback(addr string) bool {
	if addr == "0" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
