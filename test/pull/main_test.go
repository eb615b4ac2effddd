package pull

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

var (
	// bin is the flotilla binary built for this run; stateDir holds the
	// environment; root is the repository root.
	bin, stateDir, root string
	// env is the running environment's state.
	env *localenv.State
	// componentsEnv points `flotilla up` at the built components.
	componentsEnv string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

// run builds the binary, starts the environment, runs the tests and stops
// it (its logs stay in the state directory when a test failed).
func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "flotilla-pull-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if root, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin, stateDir = filepath.Join(tmp, "flotilla"), filepath.Join(tmp, "state")
	if out, err := command("go", "build", "-o", bin, "./cmd/flotilla").CombinedOutput(); err != nil {
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
	componentsEnv = components.EnvComponentsDir + "=" + set.Dir
	up := command(bin, "up", "--state-dir", stateDir, "--members", "3", "--pull-members", "1", "--nodes", "1")
	if out, err := up.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "flotilla up: %v\n%s", err, out)
		_ = command(bin, "down", "--state-dir", stateDir).Run()
		return 1
	}
	if env, err = localenv.LoadState(stateDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if out, err := command(bin, "down", "--state-dir", stateDir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "flotilla down: %v\n%s", err, out)
	}
	if code == 0 {
		_ = os.RemoveAll(tmp)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s\n", stateDir)
	}
	return code
}

// command runs name from the repository root.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), componentsEnv)
	return cmd
}
