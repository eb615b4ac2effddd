package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// A leader whose host apiserver stops answering (its connections cut by a
// proxy) loses its lease and Run says so with ErrLeaseLost, the error the
// controller-manager command restarts on; WaitForHost then waits until
// the host answers again.
func TestRunReportsLostLease(t *testing.T) {
	testenv.Need(t, env)
	u, err := url.Parse(env.Host.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, u.Host)
	cfg := rest.CopyConfig(env.Host.Config)
	cfg.Host = "https://" + proxy.Addr()
	cfg.Timeout = 2 * time.Second

	opts := DefaultOptions()
	opts.Controllers = nil
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElectionID = "lease-lost-test"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 4*time.Second, 2*time.Second, 500*time.Millisecond
	opts.GracefulShutdown = time.Second
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig())))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, opts) }()

	leases := env.Host.Client.CoordinationV1().Leases(opts.LeaderElectionNamespace)
	testenv.Eventually(t, time.Minute, "the manager holds the lease", func(ctx context.Context) error {
		select {
		case err := <-done:
			t.Fatalf("Run returned before the fault: %v", err)
		default:
		}
		l, err := leases.Get(ctx, opts.LeaderElectionID, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	proxy.Cut()
	cut := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Run after the host went away: %v, want ErrLeaseLost", err)
		}
		t.Logf("Run returned %s after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return a minute after the host went away")
	}

	short, stop := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer stop()
	if err := WaitForHost(short, cfg, 100*time.Millisecond); err == nil {
		t.Fatal("WaitForHost returned while the host is cut off")
	}
	proxy.Restore()
	wctx, wstop := context.WithTimeout(ctx, 30*time.Second)
	defer wstop()
	if err := WaitForHost(wctx, cfg, 100*time.Millisecond); err != nil {
		t.Fatalf("WaitForHost after the host came back: %v", err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("leader election lost"), true},
		{errors.New("failed to wait for caches to sync"), false},
	} {
		if got := errors.Is(classify(tc.err), ErrLeaseLost); got != tc.want {
			t.Errorf("classify(%v) is ErrLeaseLost: %v, want %v", tc.err, got, tc.want)
		}
	}
}
