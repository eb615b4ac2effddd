package manager

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// env is a host-only environment for the integration tests (nil under
// -short).
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{HostOnly: true}, &env))
}

// startManager builds a manager with opts against the environment's host
// (PrepareHost, then New) as the controller-manager's ServiceAccount with
// the shipped role, and runs it until the test ends.
func startManager(t *testing.T, opts Options) ctrl.Manager {
	t.Helper()
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig()))
	ctx := context.Background()
	cfg := env.ControllerConfig(t)
	if err := PrepareHost(ctx, cfg, opts); err != nil {
		t.Fatalf("prepare host: %v", err)
	}
	mgr, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("manager did not stop")
		}
	})
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		t.Fatal("manager cache did not start")
	}
	return mgr
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}
