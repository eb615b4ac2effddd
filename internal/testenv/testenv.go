package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// EnvKeepState keeps the state directory (logs, data) after the tests when
// set to a non-empty value.
const EnvKeepState = "FLOTILLA_TEST_KEEP_STATE"

// Options describe the environment a test package needs.
type Options struct {
	// Members is the number of member clusters (default 2; 0 means host only
	// when HostOnly is set).
	Members int
	// HostOnly starts no members.
	HostOnly bool
	// APIServerOnly starts members without controllers, scheduler or kwok.
	APIServerOnly bool
	// NodesPerMember is the number of kwok nodes per member (default 2).
	NodesPerMember int
	// NodeCPU and NodeMemory are each node's capacity (defaults: 4, 16Gi).
	NodeCPU, NodeMemory string
}

// Environment is a running test environment.
type Environment struct {
	// Host is the host control plane.
	Host *Cluster
	// Members are the member clusters, member-1 first.
	Members []*Cluster
	// Components is the component set the environment runs.
	Components components.Set
	// StateDir holds the environment's files.
	StateDir string

	env                  *localenv.Environment
	controllerKubeconfig string
}

// Cluster is one cluster of the environment with clients for it.
type Cluster struct {
	// Name is "host" or "member-N".
	Name string
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Labels are the cluster's labels (region and zone for members).
	Labels map[string]string
	// Config is an admin client configuration.
	Config *rest.Config
	// Client is a typed admin client.
	Client kubernetes.Interface
	// Dynamic is a dynamic admin client.
	Dynamic dynamic.Interface
}

// Start builds the components if needed (progress on stderr) and starts an
// environment in a new temporary state directory.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	set, err := components.Ensure(ctx, components.Options{Out: os.Stderr})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flotilla-test-")
	if err != nil {
		return nil, err
	}
	lo := localenv.DefaultOptions()
	lo.StateDir = dir
	lo.Members = opts.Members
	if lo.Members == 0 && !opts.HostOnly {
		lo.Members = 2
	}
	if opts.HostOnly {
		lo.Members = 0
	}
	if opts.APIServerOnly {
		lo.MemberMode = localenv.ModeAPIServerOnly
	}
	lo.NodesPerMember = orDefault(opts.NodesPerMember, 2)
	lo.NodeCPU = orString(opts.NodeCPU, "4")
	lo.NodeMemory = orString(opts.NodeMemory, "16Gi")
	lo.Out = os.Stderr
	env, err := localenv.Up(ctx, set, lo)
	if err != nil {
		err = fmt.Errorf("start test environment: %w", err)
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, err
	}
	e := &Environment{Components: set, StateDir: dir, env: env}
	for _, cs := range env.State.Clusters {
		c, err := newCluster(cs)
		if err != nil {
			if stopErr := e.Stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("stop: %w", stopErr))
			}
			return nil, err
		}
		if cs.Role == localenv.RoleHost {
			e.Host = c
			e.controllerKubeconfig = cs.ControllerKubeconfig
		} else {
			e.Members = append(e.Members, c)
		}
	}
	return e, nil
}

func newCluster(cs localenv.ClusterState) (*Cluster, error) {
	cfg, err := localenv.RESTConfig(cs.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cs.Name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", cs.Name, err)
	}
	return &Cluster{Name: cs.Name, Kubeconfig: cs.Kubeconfig, Labels: cs.Labels, Config: cfg, Client: client, Dynamic: dyn}, nil
}

// Stop stops every process and removes the state directory (unless
// FLOTILLA_TEST_KEEP_STATE is set).
func (e *Environment) Stop() error {
	err := e.env.Stop()
	if os.Getenv(EnvKeepState) != "" {
		fmt.Fprintf(os.Stderr, "Keeping the test environment's state in %s\n", e.StateDir)
		return err
	}
	if rmErr := os.RemoveAll(e.StateDir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

// Cluster returns the named cluster, or nil.
func (e *Environment) Cluster(name string) *Cluster {
	if name == localenv.HostName {
		return e.Host
	}
	for _, m := range e.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Main is the body of a test package's TestMain: it starts the environment
// (unless -short, or -run '^$' for benchmarks), runs the tests and stops the environment, returning the
// exit code for os.Exit.
func Main(m *testing.M, opts Options, env **Environment) int {
	flag.Parse()
	if testing.Short() || noTestsSelected() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	e, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// noTestsSelected reports whether -run selects nothing (benchmark runs use
// -run '^$'), in which case no environment is needed.
func noTestsSelected() bool {
	f := flag.Lookup("test.run")
	return f != nil && f.Value.String() == "^$"
}

// Need skips the test when no environment runs (-short mode).
func Need(t testing.TB, env *Environment) {
	t.Helper()
	if env == nil {
		t.Skip("needs a test environment (not started under -short)")
	}
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func orString(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
