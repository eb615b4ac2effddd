package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agentcert"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// Options configure an agent.
type Options struct {
	// Cluster is the MemberCluster's name on the hub.
	Cluster string
	// Hub reaches the hub with a fixed credential of the agent (a token
	// from `flotilla join --agent-kubeconfig`). Either Hub or Bootstrap.
	Hub *rest.Config
	// Bootstrap reaches the hub with the bootstrap credential, which can
	// only ask for the agent's certificate; the agent then works with that
	// certificate and renews it. Either Hub or Bootstrap.
	Bootstrap *rest.Config
	// CertDir keeps the agent's certificate and key across restarts (""
	// keeps them in memory: every start asks anew).
	CertDir string
	// CertificateLifetime is the lifetime the agent asks for (the hub may
	// give less).
	CertificateLifetime time.Duration
	// Member reaches the member with the agent's own credential.
	Member *rest.Config
	// LeaderElect runs one working agent among replicas, elected by a
	// Lease in the member (LeaderElectionNamespace/LeaderElectionID).
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// Identity names this agent in the heartbeat and the leader Lease
	// (default: the host name).
	Identity string
	// ProbeAddr serves /healthz and /readyz ("0": off); MetricsAddr
	// serves Prometheus metrics ("0": off).
	ProbeAddr, MetricsAddr string
	// Workers bounds parallel intent reconciles.
	Workers int
	// Session tunes the member session. The agent reports every probe as
	// it is (the hub damps), so its thresholds are not used.
	Session member.Options
	// Heartbeat is the Lease renewal interval (default
	// pull.AgentHeartbeat).
	Heartbeat time.Duration
	// HubQPS and HubBurst limit the agent's requests to the hub (reports
	// and heartbeats); 0 keeps the defaults.
	HubQPS   float32
	HubBurst int
	// Gateway is the URL of the federation's gateway: the agent keeps a
	// tunnel open to it that carries the gateway's reads of the member's
	// pods, events, nodes, endpointslices and replicasets and a pod's
	// logs, exec and port-forward ("": no tunnel, and the gateway leaves
	// the member out).
	Gateway string
	// GatewayCA is the PEM CA bundle the gateway's serving certificate is
	// checked against (nil: the hub's CA).
	GatewayCA []byte
	// GatewayMember reaches the member for the gateway's requests (nil:
	// Member): an identity limited to what the gateway serves keeps a
	// compromised hub from using the agent's own.
	GatewayMember *rest.Config
	// GatewayNoStreamsIn are namespaces the gateway may not exec, attach
	// or port-forward into (default: kube-system and the agent's own
	// namespace when it runs in the member).
	GatewayNoStreamsIn []string
}

// The default limits of the agent's hub client: a create burst of a
// thousand objects is reported within seconds, while a thousand agents at
// rest send only their heartbeats.
const (
	defaultHubQPS   = 100
	defaultHubBurst = 200
)

// DefaultOptions are the production defaults.
func DefaultOptions() Options {
	return Options{
		LeaderElect: true, LeaderElectionNamespace: v1alpha1.SystemNamespace, LeaderElectionID: "flotilla-agent",
		ProbeAddr: "127.0.0.1:8091", MetricsAddr: "127.0.0.1:8090", Workers: 8,
		Session: member.DefaultOptions(), Heartbeat: pull.AgentHeartbeat, CertificateLifetime: agentcert.DefaultLifetime,
		HubQPS: defaultHubQPS, HubBurst: defaultHubBurst,
	}
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	switch {
	case o.Cluster == "":
		return errors.New("the cluster's name is required (--cluster)")
	case (o.Hub == nil) == (o.Bootstrap == nil):
		return errors.New("exactly one credential for the hub is required: --bootstrap-kubeconfig (the agent gets its certificate) or --hub-kubeconfig (a token)")
	case o.Member == nil:
		return errors.New("a credential for the member is required (--kubeconfig, or run in the member)")
	}
	return nil
}

// Run runs the agent until ctx ends.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Bootstrap != nil {
		hub, err := certificateHub(ctx, o)
		if err != nil {
			return err
		}
		o.Hub = hub
	}
	mgr, pool, err := New(o)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Starting agent", "cluster", o.Cluster, "hubNamespace", v1alpha1.ClusterNamespace(o.Cluster), "leaderElection", o.LeaderElect)
	defer pool.StopAll()
	return mgr.Start(ctx)
}

// New builds the agent's manager: its cache holds the cluster's hub
// namespace only, and the leader Lease is in the member.
func New(o Options) (ctrl.Manager, *member.Pool, error) {
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, nil, fmt.Errorf("identity: %w", err)
		}
		o.Identity = host
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = pull.AgentHeartbeat
	}
	scheme, err := hostscheme.New()
	if err != nil {
		return nil, nil, err
	}
	hub := rest.CopyConfig(o.Hub)
	hub.QPS, hub.Burst = cmp.Or(o.HubQPS, defaultHubQPS), cmp.Or(o.HubBurst, defaultHubBurst)
	ns := v1alpha1.ClusterNamespace(o.Cluster)
	mgr, err := ctrl.NewManager(hub, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		},
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionConfig:          o.Member,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create manager: %w", err)
	}
	pool := member.NewPool()
	kick := make(chan struct{}, 1)
	// The agent reports each probe as it is: the hub damps, as it does
	// for push members' probes.
	sessOpts := o.Session
	sessOpts.FailureThreshold, sessOpts.SuccessThreshold = time.Nanosecond, time.Nanosecond
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		logger := ctrl.Log.WithName("member").WithValues("cluster", o.Cluster)
		_, err := pool.Start(ctrl.LoggerInto(ctx, logger), o.Cluster, "agent", o.Member, sessOpts, nil, nil, func(context.Context) {
			select {
			case kick <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return fmt.Errorf("connect to the member: %w", err)
		}
		<-ctx.Done()
		pool.StopAll()
		return nil
	})); err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(&heartbeat{hub: mgr.GetClient(), cluster: o.Cluster, identity: o.Identity, pool: pool, kick: kick, interval: o.Heartbeat}); err != nil {
		return nil, nil, err
	}
	if o.Gateway != "" {
		t, err := gatewayTunnel(o)
		if err != nil {
			return nil, nil, fmt.Errorf("gateway tunnel: %w", err)
		}
		if err := mgr.Add(t); err != nil {
			return nil, nil, err
		}
	}
	r := &Reconciler{Hub: mgr.GetClient(), HubReader: mgr.GetAPIReader(), Cluster: o.Cluster, Pool: pool, Workers: o.Workers}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the intent reconciler: %w", err)
	}
	usage := &UsageReporter{Hub: mgr.GetClient(), Cluster: o.Cluster, Pool: pool}
	if err := usage.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the usage reporter: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	return mgr, pool, nil
}
