package manager

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/internal/agentcert"
	"github.com/flotilla-io/flotilla/internal/controller/agentsigner"
	"github.com/flotilla-io/flotilla/internal/controller/autoscale"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/controller/interpreters"
	"github.com/flotilla-io/flotilla/internal/controller/migrate"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/controller/rollout"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/controller/status"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Shared is what several controllers use: the member sessions, the host
// template cache and a dynamic host client.
type Shared struct {
	// Pool holds the member sessions (the cluster controller runs them).
	Pool *member.Pool
	// Templates watches the host objects that may be propagated.
	Templates *templates.Cache
	// Dynamic reads and writes any host kind.
	Dynamic dynamic.Interface
	// Interpreters compiles the WorkloadInterpreters into
	// workload.Interpreters.
	Interpreters *interpreters.Loader
	// Rollouts says the rollout controller runs: only then does propagate
	// hold copies for a federated rollout (without it they would wait
	// for a plan nobody writes).
	Rollouts bool
	// Ledger holds the scheduler's reservations; nil when simulated
	// scheduling is off.
	Ledger *ledger.Ledger
}

// Controller is a controller the manager can run.
type Controller struct {
	// Name is the name --controllers uses.
	Name string
	// Setup registers the controller with the manager.
	Setup func(mgr ctrl.Manager, opts Options, shared *Shared) error
}

// Controllers are all controllers, in registration order.
var Controllers = []Controller{
	{Name: agentsigner.Name, Setup: setupAgentSigner},
	{Name: cluster.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &cluster.Reconciler{
			Client:                  mgr.GetClient(),
			Recorder:                eventRecorder(mgr, cluster.Name),
			CredentialsNamespace:    opts.CredentialsNamespace,
			Session:                 opts.Cluster,
			MaxConcurrentReconciles: opts.ConcurrentClusterSyncs,
			Pool:                    shared.Pool,
			Ledger:                  shared.Ledger,
			Failover:                opts.Failover,
			AllowInsecure:           opts.AllowInsecureMembers,
			SignerConfigured:        opts.AgentSigningCertFile != "",
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: federate.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &federate.Reconciler{
			Client:                  mgr.GetClient(),
			Dynamic:                 shared.Dynamic,
			Templates:               shared.Templates,
			Recorder:                eventRecorder(mgr, federate.Name),
			IgnoredNamespaces:       []string{opts.CredentialsNamespace, opts.LeaderElectionNamespace},
			MaxConcurrentReconciles: opts.ConcurrentSyncs,
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: schedule.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &schedule.Reconciler{
			Client:                  mgr.GetClient(),
			Templates:               shared.Templates,
			Recorder:                eventRecorder(mgr, schedule.Name),
			CredentialsNamespace:    opts.CredentialsNamespace,
			MaxConcurrentReconciles: opts.ConcurrentSyncs,
		}
		if shared.Ledger != nil {
			r.Estimator = &estimate.Estimator{Members: estimate.PoolMembers{Pool: shared.Pool}, Ledger: shared.Ledger}
		}
		if !opts.Failover.Disabled {
			r.EvictionObjectsPerMinute = opts.Failover.ObjectsPerMinutePerCluster
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: migrate.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &migrate.Reconciler{
			Client:                  mgr.GetClient(),
			Templates:               shared.Templates,
			Pool:                    shared.Pool,
			Recorder:                eventRecorder(mgr, migrate.Name),
			MaxConcurrentReconciles: opts.ConcurrentSyncs,
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: propagate.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &propagate.Reconciler{
			Client:                  mgr.GetClient(),
			Templates:               shared.Templates,
			Pool:                    shared.Pool,
			Recorder:                eventRecorder(mgr, propagate.Name),
			MaxConcurrentReconciles: opts.ConcurrentPropagationSyncs,
			FederatedRollouts:       shared.Rollouts,
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: interpreters.Name, Setup: func(mgr ctrl.Manager, _ Options, shared *Shared) error {
		r := &interpreters.Reconciler{
			Client:   mgr.GetClient(),
			Reader:   mgr.GetAPIReader(),
			Loader:   shared.Interpreters,
			Recorder: eventRecorder(mgr, interpreters.Name),
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: autoscale.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &autoscale.Reconciler{
			Client:    mgr.GetClient(),
			Reader:    mgr.GetAPIReader(),
			Templates: shared.Templates,
			Pool:      shared.Pool,
			Recorder:  eventRecorder(mgr, autoscale.Name),
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: rollout.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &rollout.Reconciler{
			Client:                  mgr.GetClient(),
			Templates:               shared.Templates,
			Pool:                    shared.Pool,
			MaxConcurrentReconciles: opts.ConcurrentSyncs,
			StallAfter:              opts.RolloutStallAfter,
		}
		return r.SetupWithManager(mgr)
	}},
	{Name: status.Name, Setup: func(mgr ctrl.Manager, opts Options, shared *Shared) error {
		r := &status.Reconciler{
			Client:                  mgr.GetClient(),
			Dynamic:                 shared.Dynamic,
			Templates:               shared.Templates,
			Pool:                    shared.Pool,
			MaxConcurrentReconciles: opts.ConcurrentSyncs,
			Recorder:                eventRecorder(mgr, status.Name),
		}
		return r.SetupWithManager(mgr)
	}},
}

// ControllerNames returns the names of all controllers, sorted.
func ControllerNames() []string {
	names := make([]string, 0, len(Controllers))
	for _, c := range Controllers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// Enabled resolves a --controllers list against the known controller
// names: "*" enables all, "name" enables one, "-name" disables one
// (after "*"). Unknown names are an error.
func Enabled(list []string, known []string) (map[string]bool, error) {
	enabled := map[string]bool{}
	for _, item := range list {
		item = strings.TrimSpace(item)
		name := strings.TrimPrefix(item, "-")
		switch {
		case item == "*":
			for _, k := range known {
				if _, set := enabled[k]; !set {
					enabled[k] = true
				}
			}
		case item == "" || name == "":
			return nil, fmt.Errorf("--controllers: empty controller name")
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(known, ", "))
		default:
			enabled[name] = !strings.HasPrefix(item, "-")
		}
	}
	for k, on := range enabled {
		if !on {
			delete(enabled, k)
		}
	}
	return enabled, nil
}

// setupAgentSigner registers the agent-signer controller when the
// controller-manager has a signing CA; without one it logs that pull
// agents will stay pending.
func setupAgentSigner(mgr ctrl.Manager, opts Options, _ *Shared) error {
	logger := mgr.GetLogger().WithName(agentsigner.Name)
	if opts.AgentSigningCertFile == "" {
		logger.Info("No agent signing CA (--agent-signing-cert-file): pull agents' certificate requests stay pending")
		return nil
	}
	signer, err := agentcert.LoadSigner(opts.AgentSigningCertFile, opts.AgentSigningKeyFile)
	if err != nil {
		return err
	}
	signer.MaxLifetime = opts.AgentCertificateLifetime
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("certificates client: %w", err)
	}
	r := &agentsigner.Reconciler{
		Client: mgr.GetClient(), Certificates: cs, Signer: signer,
		Recorder: eventRecorder(mgr, agentsigner.Name),
	}
	return r.SetupWithManager(mgr)
}
