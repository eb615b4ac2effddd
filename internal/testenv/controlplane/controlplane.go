// Package controlplane runs the controller-manager in process for the
// integration tests of controllers, as the environment's controller-manager
// identity (the shipped role, not the admin), with member timings short
// enough for tests. It is its own package so that internal/testenv stays
// importable by internal/manager's own tests.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/internal/manager"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// FastMembers is the member timing of the tests: probes every 500 ms, a
// member unreachable for 2 s is not Ready, discovery every 2 s.
func FastMembers() member.Options {
	return member.Options{
		ProbeInterval: 500 * time.Millisecond, ProbeTimeout: time.Second, DiscoveryInterval: 2 * time.Second,
		FailureThreshold: 2 * time.Second, SuccessThreshold: time.Second, NotifyInterval: 200 * time.Millisecond,
	}
}

// Options are the manager defaults for an in-process test run of the
// named controllers: no leader election, no metrics or probe listeners,
// FastMembers.
func Options(controllers ...string) manager.Options {
	opts := manager.DefaultOptions()
	opts.Controllers = controllers
	opts.LeaderElect, opts.MetricsAddr, opts.ProbeAddr = false, "0", "0"
	opts.Cluster = FastMembers()
	return opts
}

// Start creates the CRDs and system namespaces on the host, then runs the
// controller-manager with opts in the background for the rest of the
// test binary, as the controller-manager's identity. Its logs go to
// stderr, which go test shows for failures.
func Start(t testing.TB, env *testenv.Environment, opts manager.Options) {
	t.Helper()
	ctx := context.Background()
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig()))
	cfg := env.ControllerConfig(t)
	if err := manager.PrepareHost(ctx, cfg, opts); err != nil {
		t.Fatalf("prepare host: %v", err)
	}
	go func() {
		if err := manager.Run(ctx, cfg, opts); err != nil {
			fmt.Fprintf(os.Stderr, "controller-manager: %v\n", err)
		}
	}()
}
