package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/manager"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestChaos seeds the workloads once and runs the scenarios one after
// another; each leaves the environment healthy for the next.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos e2e")
	}
	start := time.Now()
	env.seed(t)
	cm := env.component(t, localenv.HostName, localenv.ControllerManager)
	scenarios := []struct {
		name string
		run  func(*testing.T, *chaosEnv)
	}{
		{"host apiserver down longer than the lease", hostAPIServerDown},
		{"host etcd restarted", hostEtcdRestarted},
		{"a member answers slowly", slowMember},
		{"a member rejects writes", rejectingMember},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			begin := time.Now()
			s.run(t, env)
			t.Logf("%s: %s", s.name, time.Since(begin).Round(100*time.Millisecond))
		})
	}
	if now := env.component(t, localenv.HostName, localenv.ControllerManager); now.PID != cm.PID || !running(now.PID, now.Binary) {
		t.Errorf("controller-manager pid %d at the start, pid %d (running %v) at the end: it was restarted from outside", cm.PID, now.PID, running(now.PID, now.Binary))
	}
	t.Logf("all scenarios in %s", time.Since(start).Round(100*time.Millisecond))
}

// hostAPIServerDown kills the host apiserver for longer than the
// controller-manager's lease: the controller-manager loses its lease,
// starts afresh by itself (same pid), waits for the host and leads again
// once `flotilla up` has restarted the apiserver; the members keep every
// copy throughout.
func hostAPIServerDown(t *testing.T, e *chaosEnv) {
	before := e.observe(t)
	cm := e.component(t, localenv.HostName, localenv.ControllerManager)
	api := e.component(t, localenv.HostName, components.KubeAPIServer)
	outage := manager.DefaultOptions().LeaseDuration + 10*time.Second
	logSize := fileSize(cm.Log)

	if err := syscall.Kill(api.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Cleanup(func() { e.repairIfDown(t, localenv.HostName, components.KubeAPIServer) })
	// The members do not depend on the host: every copy stays meanwhile.
	if copies := e.memberCopies(t); fmt.Sprint(copies) != fmt.Sprint(before.copies) {
		t.Errorf("member copies changed while the host apiserver was down")
	}
	time.Sleep(time.Until(killed.Add(outage))) // the fault's duration
	if !running(cm.PID, cm.Binary) {
		t.Errorf("the controller-manager (pid %d) exited %s into a host apiserver outage and nothing restarted it; its log ends:\n%s",
			cm.PID, outage, lastLines(readFrom(cm.Log, logSize), 15))
	} else if log := readFrom(cm.Log, logSize); !strings.Contains(log, "Lost the leader lease") {
		t.Errorf("the controller-manager did not lose its lease in a %s outage (lease %s); its log:\n%s", outage, manager.DefaultOptions().LeaseDuration, lastLines(log, 15))
	}

	e.repair(t)
	if now := e.component(t, localenv.HostName, localenv.ControllerManager); now.PID != cm.PID {
		t.Errorf("flotilla up restarted the controller-manager (pid %d, was %d): it did not recover by itself", now.PID, cm.PID)
	}
	e.waitControllerManagerLeads(t, killed)
	t.Logf("controller-manager leads again %s after the apiserver was killed (outage %s)", time.Since(killed).Round(100*time.Millisecond), outage)
	e.nothingLost(t, before)
	e.converges(t, "after-apiserver-outage")
	e.nothingLost(t, before)
}

// hostEtcdRestarted kills the host etcd and starts it again with its data:
// the host apiserver reconnects by itself.
func hostEtcdRestarted(t *testing.T, e *chaosEnv) {
	before := e.observe(t)
	etcd := e.component(t, localenv.HostName, components.Etcd)
	api := e.component(t, localenv.HostName, components.KubeAPIServer)
	if err := syscall.Kill(etcd.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Cleanup(func() { e.repairIfDown(t, localenv.HostName, components.Etcd) })
	time.Sleep(5 * time.Second) // the fault's duration
	e.repair(t)
	if now := e.component(t, localenv.HostName, components.Etcd); now.PID == etcd.PID {
		t.Fatalf("etcd was not restarted (pid %d)", now.PID)
	}
	testenv.Eventually(t, time.Minute, "host apiserver ready", func(ctx context.Context) error {
		_, err := e.typed[localenv.HostName].Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
	if now := e.component(t, localenv.HostName, components.KubeAPIServer); now.PID != api.PID || !running(api.PID, api.Binary) {
		t.Errorf("the host apiserver did not survive the etcd restart (pid %d, was %d)", now.PID, api.PID)
	}
	e.waitControllerManagerLeads(t, killed)
	e.nothingLost(t, before)
	e.converges(t, "after-etcd-restart")
	e.nothingLost(t, before)
}

// waitControllerManagerLeads waits until the controller-manager is ready
// and has renewed its lease after since.
func (e *chaosEnv) waitControllerManagerLeads(t *testing.T, since time.Time) {
	t.Helper()
	cm := e.component(t, localenv.HostName, localenv.ControllerManager)
	opts := manager.DefaultOptions()
	testenv.Eventually(t, 2*time.Minute, "controller-manager ready and leading", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cm.HealthURL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", cm.HealthURL, resp.Status)
		}
		l, err := e.typed[localenv.HostName].CoordinationV1().Leases(opts.LeaderElectionNamespace).Get(ctx, opts.LeaderElectionID, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(since) {
			return fmt.Errorf("lease of %v last renewed %v", l.Spec.HolderIdentity, l.Spec.RenewTime)
		}
		return nil
	})
}

// repairIfDown restarts a component a failed scenario left stopped.
func (e *chaosEnv) repairIfDown(t *testing.T, cluster, name string) {
	t.Helper()
	if c := e.component(t, cluster, name); !running(c.PID, c.Binary) {
		e.repair(t)
	}
}

// running reports whether pid is a live (not zombie) process of binary.
func running(pid int, binary string) bool {
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil || strings.TrimSuffix(exe, " (deleted)") != binary {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns a file's content from offset on.
func readFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return string(b[offset:])
}
