package e2e

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

	"github.com/flotilla-io/flotilla/internal/components"
)

var (
	// flotillaBin is the flotilla binary built for this run.
	flotillaBin string
	// componentsDir holds the Kubernetes component binaries.
	componentsDir string
	// repoRoot is the repository root (the working directory of commands).
	repoRoot string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "flotilla-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	repoRoot, err = filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	flotillaBin = filepath.Join(tmp, "flotilla")
	build := exec.Command("go", "build", "-o", flotillaBin, "./cmd/flotilla")
	build.Dir = repoRoot
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
	componentsDir = set.Dir
	return m.Run()
}

// result is what a flotilla command did.
type result struct {
	stdout, stderr string
	err            error
}

// flotilla runs the binary with args from the repository root.
func flotilla(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flotillaBin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), components.EnvComponentsDir+"="+componentsDir)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	t.Logf("flotilla %s: err=%v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}
