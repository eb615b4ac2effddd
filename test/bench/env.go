package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// bench is a running benchmark environment and the harness's clients.
type bench struct {
	opts options
	// dir is the state directory; ownDir says the harness created it.
	dir    string
	ownDir bool
	// buildDir holds the flotilla binary the harness built, if any.
	buildDir string
	flotilla string
	set      components.Set
	env      *localenv.Environment
	// host is a typed host client, hostCR a controller-runtime one for
	// the flotilla.io kinds.
	host   kubernetes.Interface
	hostCR client.Client
	// members are the member clusters in order.
	members []memberCluster
	// rec routes watch events to the scenarios waiting for them.
	rec *recorder
	// watchCtx bounds the harness's informers; stopWatches ends them
	// before the environment stops.
	watchCtx    context.Context
	stopWatches context.CancelFunc
	// baseline is the resource use measured before any workload.
	baseline usage
	// prof saves controller-manager profiles (--profile-dir).
	prof profiler
}

// memberCluster is one member and the harness's client for it.
type memberCluster struct {
	name string
	cs   kubernetes.Interface
}

// setUp builds or locates the binaries and starts the environment. On
// error the returned bench (if any) still needs tearDown.
func setUp(ctx context.Context, opts options) (*bench, error) {
	b := &bench{opts: opts, rec: newRecorder()}
	b.prof = profiler{dir: opts.profileDir, seconds: opts.profileSecs, b: b}
	b.watchCtx, b.stopWatches = context.WithCancel(ctx)
	if err := b.locateFlotilla(ctx); err != nil {
		return b, err
	}
	set, err := components.Ensure(ctx, components.Options{Out: os.Stderr})
	if err != nil {
		return b, fmt.Errorf("component binaries: %w", err)
	}
	b.set = set
	if b.dir = opts.stateDir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "flotilla-bench-"); err != nil {
			return b, fmt.Errorf("state directory: %w", err)
		}
		b.ownDir = true
	}
	envOpts := localenv.DefaultOptions()
	envOpts.StateDir = b.dir
	envOpts.Members = opts.members
	envOpts.MemberMode = localenv.MemberMode(opts.memberMode)
	if opts.memberMode == modePull {
		envOpts.MemberMode, envOpts.PullMembers = localenv.ModeAPIServerOnly, opts.members
	}
	envOpts.Flotilla = b.flotilla
	envOpts.Out = os.Stderr
	// Divide gives every member one replica of every workload: make room.
	envOpts.NodePods = strconv.Itoa(max(110, opts.workloads/max(envOpts.NodesPerMember, 1)+50))
	logf("starting host + %d %s member(s) in %s", opts.members, opts.memberMode, b.dir)
	env, err := localenv.Up(ctx, set, envOpts)
	if errors.Is(err, localenv.ErrAlreadyRunning) {
		b.dir = "" // not ours to stop
		return b, fmt.Errorf("%s already holds a running environment; give another --state-dir", opts.stateDir)
	}
	if err != nil {
		return b, fmt.Errorf("start the environment: %w", err)
	}
	b.env = env
	if err := b.connect(env.State); err != nil {
		return b, err
	}
	b.baseline, err = b.measureUsage(ctx)
	if err != nil {
		return b, fmt.Errorf("baseline resource use: %w", err)
	}
	return b, nil
}

// locateFlotilla uses --flotilla or builds ./cmd/flotilla from the module
// root into a temporary directory.
func (b *bench) locateFlotilla(ctx context.Context) error {
	path := b.opts.flotilla
	if path == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		if b.buildDir, err = os.MkdirTemp("", "flotilla-bench-bin-"); err != nil {
			return fmt.Errorf("build directory: %w", err)
		}
		path = filepath.Join(b.buildDir, "flotilla")
		logf("building %s", path)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/flotilla")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build flotilla: %w\n%s", err, out)
		}
	}
	// The environment recognises its processes by their executable path.
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("flotilla binary: %w", err)
	}
	if b.flotilla, err = filepath.EvalSymlinks(abs); err != nil {
		return fmt.Errorf("flotilla binary: %w", err)
	}
	return nil
}

// moduleRoot walks up from the working directory to the flotilla module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(b, []byte("module github.com/flotilla-io/flotilla\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the flotilla module: run from the repository or give --flotilla")
		}
		dir = parent
	}
}

// connect builds the harness's clients from the state's kubeconfigs.
func (b *bench) connect(st *localenv.State) error {
	for _, c := range st.Clusters {
		cfg, err := b.restConfig(c.Kubeconfig)
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(protobuf(cfg))
		if err != nil {
			return fmt.Errorf("client for %s: %w", c.Name, err)
		}
		if c.Role == localenv.RoleMember {
			b.members = append(b.members, memberCluster{name: c.Name, cs: cs})
			continue
		}
		b.host = cs
		scheme, err := hostscheme.New()
		if err != nil {
			return fmt.Errorf("host scheme: %w", err)
		}
		if b.hostCR, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return fmt.Errorf("host client: %w", err)
		}
	}
	return nil
}

// restConfig is a client configuration with the harness's QPS and burst.
func (b *bench) restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := localenv.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(b.opts.clientQPS), b.opts.clientBurst
	cfg.UserAgent = "flotilla-bench"
	return cfg, nil
}

// protobuf returns a copy of cfg that speaks protobuf, which costs the
// harness (sharing the CPUs with what it measures) less than JSON.
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c
}

// tearDown stops every process of the environment (from the state on
// disk, which knows about a restarted controller-manager) and removes the
// state directory unless --keep, and the build directory.
func (b *bench) tearDown() error {
	b.stopWatches()
	var errs []error
	if b.dir != "" && (b.env != nil || b.ownDir) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		purge := !b.opts.keep
		if err := localenv.Down(ctx, b.dir, purge, os.Stderr); err != nil {
			errs = append(errs, fmt.Errorf("stop the environment: %w", err))
		}
		if b.env != nil {
			errs = append(errs, b.env.Stop()) // reaps the processes it started
		}
		if b.opts.keep {
			logf("kept the state directory %s", b.dir)
		} else if b.ownDir {
			errs = append(errs, os.RemoveAll(b.dir))
		}
	}
	if b.buildDir != "" {
		errs = append(errs, os.RemoveAll(b.buildDir))
	}
	return errors.Join(errs...)
}

// state reads the environment's current state from disk.
func (b *bench) state() (*localenv.State, error) {
	st, err := localenv.LoadState(b.dir)
	if err != nil {
		return nil, fmt.Errorf("environment state: %w", err)
	}
	return st, nil
}

// component returns a recorded component of a cluster.
func component(st *localenv.State, cluster, name string) (localenv.ComponentState, error) {
	cl, ok := st.Cluster(cluster)
	if !ok {
		return localenv.ComponentState{}, fmt.Errorf("no cluster %q in the environment", cluster)
	}
	for _, c := range cl.Components {
		if c.Name == name {
			return c, nil
		}
	}
	return localenv.ComponentState{}, fmt.Errorf("cluster %s has no component %q", cluster, name)
}

// controllerManager returns the controller-manager's current state.
func (b *bench) controllerManager() (localenv.ComponentState, error) {
	st, err := b.state()
	if err != nil {
		return localenv.ComponentState{}, err
	}
	return component(st, localenv.HostName, localenv.ControllerManager)
}

// agents returns the recorded agent processes of pull members.
func (b *bench) agents() ([]localenv.ComponentState, error) {
	st, err := b.state()
	if err != nil {
		return nil, err
	}
	var out []localenv.ComponentState
	for _, c := range st.Clusters {
		for _, comp := range c.Components {
			if comp.Name == localenv.Agent {
				out = append(out, comp)
			}
		}
	}
	return out, nil
}

// cmMetricsURL is the controller-manager's Prometheus endpoint.
func cmMetricsURL(cm localenv.ComponentState) (string, error) {
	if len(cm.Ports) == 0 {
		return "", fmt.Errorf("%s records no metrics port", cm.Name)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", cm.Ports[0]), nil
}

// upAgain runs `flotilla up` on the state directory, which restarts the
// components that are not running with their recorded arguments, as a
// user would.
func (b *bench) upAgain(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, b.flotilla, "up", "--state-dir", b.dir)
	cmd.Env = append(os.Environ(), components.EnvComponentsDir+"="+b.set.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("flotilla up: %w\n%s", err, out)
	}
	if !strings.Contains(string(out), "restarted") {
		return fmt.Errorf("flotilla up restarted nothing:\n%s", out)
	}
	return nil
}

// gone reports whether a process has exited (or is a zombie waiting to be
// reaped).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// statusUnsupported says why the status scenario cannot run, if it cannot.
func (b *bench) statusUnsupported() string {
	if localenv.MemberMode(b.opts.memberMode) != localenv.ModeFull {
		return "apiserver-only members run no controllers, so there is no status to aggregate (use --member-mode full)"
	}
	return ""
}
