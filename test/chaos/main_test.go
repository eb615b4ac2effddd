package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// env is the environment every scenario shares (nil under -short).
var env *chaosEnv

// chaosEnv is a running `flotilla up` environment as a user sees it.
type chaosEnv struct {
	dir           string
	bin           string // the flotilla binary built for this run
	componentsDir string
	repoRoot      string
	host          client.Client
	typed         map[string]kubernetes.Interface // by cluster name
}

// members are the member clusters of the environment.
var members = []string{"member-1", "member-2", "member-3"}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "flotilla-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()
	e := &chaosEnv{dir: filepath.Join(tmp, "env"), bin: filepath.Join(tmp, "flotilla"), typed: map[string]kubernetes.Interface{}}
	if e.repoRoot, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/flotilla")
	build.Dir = e.repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build flotilla: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	set, err := components.Ensure(ctx, components.Options{Out: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e.componentsDir = set.Dir
	defer func() {
		if out, err := e.flotilla("down", "--purge", "--state-dir", e.dir); err != nil {
			fmt.Fprintf(os.Stderr, "flotilla down: %v\n%s", err, out)
		}
	}()
	if out, err := e.flotilla("up", "--state-dir", e.dir, "--members", fmt.Sprint(len(members))); err != nil {
		fmt.Fprintf(os.Stderr, "flotilla up: %v\n%s", err, out)
		keep = true
		return 1
	}
	if err := e.connect(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = e
	fmt.Fprintf(os.Stderr, "chaos environment ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		log := filepath.Join(e.dir, "clusters", localenv.HostName, "logs", localenv.ControllerManager+".log")
		if b, err := os.ReadFile(log); err == nil {
			fmt.Fprintf(os.Stderr, "last lines of the controller-manager log (%s):\n%s\n", log, lastLines(string(b), 150))
		}
	}
	return code
}

// connect builds clients for every cluster of the state.
func (e *chaosEnv) connect() error {
	st, err := localenv.LoadState(e.dir)
	if err != nil {
		return err
	}
	scheme, err := hostscheme.New()
	if err != nil {
		return err
	}
	for _, c := range st.Clusters {
		cfg, err := localenv.RESTConfig(c.Kubeconfig)
		if err != nil {
			return err
		}
		if e.typed[c.Name], err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		if c.Role == localenv.RoleHost {
			if e.host, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
				return err
			}
		}
	}
	return nil
}

// flotilla runs the binary from the repository root and returns its
// combined output.
func (e *chaosEnv) flotilla(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = e.repoRoot
	cmd.Env = append(os.Environ(), components.EnvComponentsDir+"="+e.componentsDir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// component returns a component's recorded state (pid, ports, arguments).
func (e *chaosEnv) component(t *testing.T, cluster, name string) localenv.ComponentState {
	t.Helper()
	st, err := localenv.LoadState(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	cl, ok := st.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s", cluster)
	}
	for _, c := range cl.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %s in %s", name, cluster)
	return localenv.ComponentState{}
}

// repair runs `flotilla up` on the environment, which restarts the
// components that are not running with their data.
func (e *chaosEnv) repair(t *testing.T) {
	t.Helper()
	out, err := e.flotilla("up", "--state-dir", e.dir)
	t.Logf("flotilla up (repair): %v\n%s", err, out)
	if err != nil {
		t.Fatalf("flotilla up: %v", err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
