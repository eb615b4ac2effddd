// Package manager runs the flotilla controller-manager: it installs the
// CRDs, then starts the enabled controllers under one controller-runtime
// manager with leader election, health probes and Prometheus metrics.
package manager

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/member"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Permissions of the manager itself (leader election and its events, its
// namespace, the CRDs). The namespaced rules assume the default
// flotilla-system for --leader-election-namespace and
// --credentials-namespace.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=flotilla-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;patch

// Options configure the controller-manager.
type Options struct {
	// Controllers is the --controllers list ("*" for all).
	Controllers []string
	// InstallCRDs installs or updates the CRDs on start.
	InstallCRDs bool
	// LeaderElect enables leader election, so that only one replica runs
	// the controllers.
	LeaderElect bool
	// LeaderElectionNamespace and LeaderElectionID name the Lease.
	LeaderElectionNamespace, LeaderElectionID string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr serves /metrics ("0" disables).
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz ("0" disables).
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
	// ConcurrentClusterSyncs bounds parallel MemberCluster reconciles.
	ConcurrentClusterSyncs int
	// ConcurrentSyncs bounds parallel reconciles of the federate, schedule
	// and status controllers.
	ConcurrentSyncs int
	// HostQPS and HostBurst limit the requests to the host (a negative QPS
	// removes the limit).
	HostQPS   float32
	HostBurst int
	// ConcurrentPropagationSyncs bounds parallel FederatedObject
	// propagations (each writes to its clusters in parallel).
	ConcurrentPropagationSyncs int
	// TemplateDiscoveryInterval is how often the host's kinds are
	// rediscovered (a CRD change triggers it at once).
	TemplateDiscoveryInterval time.Duration
	// GracefulShutdown bounds the wait for controllers to stop.
	GracefulShutdown time.Duration
}

// DefaultOptions are the defaults of the controller-manager's flags.
func DefaultOptions() Options {
	return Options{
		Controllers:                []string{"*"},
		InstallCRDs:                true,
		LeaderElect:                true,
		LeaderElectionNamespace:    v1alpha1.SystemNamespace,
		LeaderElectionID:           "flotilla-controller-manager",
		LeaseDuration:              15 * time.Second,
		RenewDeadline:              10 * time.Second,
		RetryPeriod:                2 * time.Second,
		MetricsAddr:                ":8080",
		ProbeAddr:                  ":8081",
		PprofAddr:                  "0",
		CredentialsNamespace:       v1alpha1.SystemNamespace,
		Cluster:                    member.DefaultOptions(),
		Failover:                   cluster.DefaultFailover(),
		ConcurrentClusterSyncs:     4,
		ConcurrentPropagationSyncs: 16,
		ConcurrentSyncs:            8,
		HostQPS:                    1000,
		HostBurst:                  2000,
		TemplateDiscoveryInterval:  30 * time.Second,
		GracefulShutdown:           30 * time.Second,
	}
}

// Run installs the CRDs (if asked), then runs the enabled controllers until
// ctx ends.
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
	logger.Info("Starting controller-manager", "leaderElection", opts.LeaderElect, "metrics", opts.MetricsAddr, "probes", opts.ProbeAddr)
	return mgr.Start(ctx)
}

// New builds the manager without controllers. Secrets are cached only in
// the credentials namespace.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	scheme, err := hostscheme.New()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{opts.CredentialsNamespace: {}}},
		}},
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaseDuration,
		RenewDeadline:                 &opts.RenewDeadline,
		RetryPeriod:                   &opts.RetryPeriod,
		GracefulShutdownTimeout:       &opts.GracefulShutdown,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informers not synced")
		}
		return nil
	}); err != nil {
		return nil, err
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
	if err := mgr.Add(tc); err != nil {
		return nil, err
	}
	if err := fedobj.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Shared{Pool: member.NewPool(), Templates: tc, Dynamic: dyn}, nil
}

// PrepareHost installs the CRDs and creates the system namespaces the
// manager uses.
func PrepareHost(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.InstallCRDs {
		if err := crd.Install(ctx, cfg); err != nil {
			return err
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
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
