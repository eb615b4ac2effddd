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

	"k8s.io/client-go/rest"
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
// stderr, which go test shows for failures. The result restarts it.
func Start(t testing.TB, env *testenv.Environment, opts manager.Options) *Plane {
	t.Helper()
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig()))
	opts.RunsAgain = true
	p := &Plane{cfg: env.ControllerConfig(t), opts: opts}
	if err := manager.PrepareHost(context.Background(), p.cfg, opts); err != nil {
		t.Fatalf("prepare host: %v", err)
	}
	p.run()
	return p
}

// Plane is a controller-manager that Start runs.
type Plane struct {
	cfg  *rest.Config
	opts manager.Options

	cancel context.CancelFunc
	done   chan struct{}
}

// run starts the controller-manager in the background.
func (p *Plane) run() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		if err := manager.Run(ctx, p.cfg, p.opts); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "controller-manager: %v\n", err)
		}
	}()
}

// stopWait bounds how long Restart waits for the controller-manager to
// stop.
const stopWait = time.Minute

// Restart stops the controller-manager, waits until it has stopped, calls
// while (what happens while it is down), and starts it again, as a
// process killed and started again would be.
func (p *Plane) Restart(t testing.TB, while func()) {
	t.Helper()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(stopWait):
		t.Fatalf("the controller-manager did not stop within %s", stopWait)
	}
	while()
	p.run()
}
