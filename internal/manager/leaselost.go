package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ErrLeaseLost is returned by Run when this replica led and lost its
// leader lease: the host apiserver did not answer its renewals within the
// renew deadline. Its controllers have stopped; the process should start
// afresh (Restart) or exit for a supervisor to restart it.
var ErrLeaseLost = errors.New("leader election lost")

// leaseLostMessage is the error controller-runtime's manager returns from
// Start when the lease is lost (it exposes no sentinel); the integration
// test TestRunReportsLostLease pins it.
const leaseLostMessage = "leader election lost"

// classify turns the manager's lease-lost error into ErrLeaseLost.
func classify(err error) error {
	if err != nil && err.Error() == leaseLostMessage {
		return fmt.Errorf("%w: the host apiserver did not answer the lease renewals in time", ErrLeaseLost)
	}
	return err
}

// EnvRestarted is set in the environment of a controller-manager that
// Restart started again; its value says why. Such a process waits for the
// host apiserver (WaitForHost) before it prepares the host.
const EnvRestarted = "FLOTILLA_CONTROLLER_MANAGER_RESTARTED"

// Restart replaces this process with a fresh run of the same binary with
// the same arguments (same pid, same log): the way back after a lost lease
// when no supervisor restarts the process, as in `flotilla up`. Nothing of
// the old run survives (caches, member sessions, writes in flight). It
// returns only if the exec fails.
func Restart(reason string) error {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvRestarted+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvRestarted+"="+reason)
	// /proc/self/exe is the running binary even if its file was replaced.
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("restart the controller-manager: %w", err)
	}
	return nil
}

// WaitForHost polls the host apiserver's /readyz until it answers ok or ctx
// ends, logging while it waits.
func WaitForHost(ctx context.Context, cfg *rest.Config, interval time.Duration) error {
	logger := ctrl.LoggerFrom(ctx)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("host client: %w", err)
	}
	start := time.Now()
	lastLog := time.Time{}
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		cancel()
		if err == nil {
			if !lastLog.IsZero() {
				logger.Info("Host apiserver answers again", "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if time.Since(lastLog) >= 30*time.Second {
			logger.Info("Waiting for the host apiserver", "host", cfg.Host, "err", err.Error())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the host apiserver at %s: %w", cfg.Host, ctx.Err())
		case <-time.After(interval): // the poll period of a wait with no deadline but ctx
		}
	}
}
