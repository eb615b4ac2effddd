package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// buildFlotilla builds this module's flotilla binary into dir and returns
// its path.
func buildFlotilla(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "flotilla")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/flotilla-io/flotilla/cmd/flotilla").CombinedOutput(); err != nil {
		t.Fatalf("go build flotilla: %v\n%s", err, out)
	}
	return bin
}

// startGatewayProcess runs `flotilla gateway` of bin (buildFlotilla) as
// its own process in front of env's host, as `flotilla up` does, with
// extra flags, and returns a client configuration for it without
// credentials. Benchmarks use it so that the load generator's goroutines
// and garbage do not share the gateway's runtime.
func startGatewayProcess(t testing.TB, env *testenv.Environment, bin string, extra ...string) *rest.Config {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	logFile, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"gateway",
		"--host-kubeconfig=" + gatewayIdentity(t, env, dir),
		"--client-ca-file=" + localenv.HostClientCAFile(env.StateDir),
		"--cert-dir=" + dir,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
	}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
	})
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "flotilla-gateway.crt")}}
	testenv.Eventually(t, time.Minute, "the gateway process is ready (log: "+logFile.Name()+")", func(ctx context.Context) error {
		select {
		case <-exited:
			t.Fatalf("the gateway exited: %v (log: %s)", exitErr, logFile.Name())
		default:
		}
		if _, err := os.Stat(cfg.CAFile); err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(cfg))
		if err != nil {
			return err
		}
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
	return cfg
}
