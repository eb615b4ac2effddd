package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestUpStatusDown walks the local environment's life cycle as a user does.
func TestUpStatusDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts environments")
	}
	dir := filepath.Join(t.TempDir(), "env")
	t.Cleanup(func() { flotilla(t, "down", "--purge", "--state-dir", dir) })

	r := flotilla(t, "up", "--state-dir", dir, "--members", "2", "--nodes", "2", "--node-cpu", "4")
	if r.err != nil {
		t.Fatalf("up failed: %v: %s", r.err, r.stderr)
	}
	if !strings.Contains(r.stdout, "Environment ready") {
		t.Fatalf("up did not report readiness:\n%s", r.stdout)
	}
	st, err := localenv.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.ClusterNames(); strings.Join(got, ",") != "host,member-1,member-2" {
		t.Fatalf("clusters %v, want host,member-1,member-2", got)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "state.json"))

	t.Run("second up changes nothing", func(t *testing.T) {
		r := flotilla(t, "up", "--state-dir", dir, "--members", "2")
		if r.err != nil || !strings.Contains(r.stdout, "already running") {
			t.Fatalf("second up: err=%v stdout=%q", r.err, r.stdout)
		}
		after, _ := os.ReadFile(filepath.Join(dir, "state.json"))
		if !bytes.Equal(before, after) {
			t.Errorf("second up rewrote the state:\nbefore %s\nafter %s", before, after)
		}
	})

	t.Run("status lists healthy components", func(t *testing.T) {
		r := flotilla(t, "status", "--state-dir", dir)
		if r.err != nil {
			t.Fatalf("status: %v", r.err)
		}
		// host: etcd, apiserver, kube-controller-manager,
		// flotilla-controller-manager and flotilla-gateway; members:
		// etcd, apiserver, kube-controller-manager, scheduler, kwok and
		// metrics-server.
		if n := strings.Count(r.stdout, " healthy "); n != 5+2*6 {
			t.Errorf("status shows %d healthy components, want 17:\n%s", n, r.stdout)
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		r := flotilla(t, "kubeconfig", "member-2", "--state-dir", dir)
		m2, _ := st.Cluster("member-2")
		if r.err != nil || strings.TrimSpace(r.stdout) != m2.Kubeconfig {
			t.Errorf("kubeconfig member-2: err=%v got %q want %q", r.err, r.stdout, m2.Kubeconfig)
		}
		for _, args := range [][]string{{"kubeconfig", "gateway"}, {"kubeconfig"}} {
			r = flotilla(t, append(args, "--state-dir", dir)...)
			if r.err != nil || strings.TrimSpace(r.stdout) != localenv.GatewayAdminKubeconfig(dir) {
				t.Errorf("%v: err=%v got %q want the gateway's %q", args, r.err, r.stdout, localenv.GatewayAdminKubeconfig(dir))
			}
		}
		host, _ := st.Cluster(localenv.HostName)
		r = flotilla(t, "kubeconfig", "host", "--state-dir", dir)
		if r.err != nil || strings.TrimSpace(r.stdout) != host.Kubeconfig {
			t.Errorf("kubeconfig host: err=%v got %q want %q", r.err, r.stdout, host.Kubeconfig)
		}
		r = flotilla(t, "kubeconfig", "member-9", "--state-dir", dir)
		if r.err == nil || !oneErrorLine(r.stderr, `no cluster "member-9"`) {
			t.Errorf("kubeconfig member-9: err=%v stderr=%q, want one error line naming member-9", r.err, r.stderr)
		}
	})

	t.Run("members run deployments and keep unschedulable pods pending", func(t *testing.T) {
		r := flotilla(t, "kubeconfig", "member-1", "--state-dir", dir)
		cfg, err := localenv.RESTConfig(strings.TrimSpace(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if v, err := cs.Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.36.3" {
			t.Errorf("server version %v (err %v), want v1.36.3", v, err)
		}
		ctx := context.Background()
		web := testenv.MakeDeployment("web", "default").Replicas(3).Obj()
		big := testenv.MakeDeployment("big", "default").Replicas(1).CPU("100").Obj()
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, big, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "web 3/3 ready", func(ctx context.Context) error {
			return testenv.DeploymentReady(ctx, cs, "default", "web")
		})
		testenv.Eventually(t, time.Minute, "big pending unschedulable", func(ctx context.Context) error {
			return testenv.PodsUnschedulable(ctx, cs, "default", "app=big", 1)
		})
	})

	t.Run("a second environment runs side by side", func(t *testing.T) {
		dir2 := filepath.Join(t.TempDir(), "env2")
		t.Cleanup(func() { flotilla(t, "down", "--purge", "--state-dir", dir2) })
		r := flotilla(t, "up", "--state-dir", dir2, "--members", "1", "--member-mode", "apiserver-only")
		if r.err != nil {
			t.Fatalf("second environment: %v", r.err)
		}
		for _, d := range []string{dir, dir2} {
			if r := flotilla(t, "status", "--state-dir", d); r.err != nil {
				t.Errorf("status of %s: %v", d, r.err)
			}
		}
	})

	t.Run("down leaves no process and no port", func(t *testing.T) {
		r := flotilla(t, "down", "--state-dir", dir)
		if r.err != nil {
			t.Fatalf("down: %v", r.err)
		}
		for _, c := range st.Clusters {
			for _, comp := range c.Components {
				if processRunning(comp.PID) {
					t.Errorf("%s %s (pid %d) still running after down", c.Name, comp.Name, comp.PID)
				}
				for _, p := range comp.Ports {
					if listening(p) {
						t.Errorf("%s %s port %d still listening after down", c.Name, comp.Name, p)
					}
				}
			}
		}
		if r := flotilla(t, "status", "--state-dir", dir); r.err == nil {
			t.Errorf("status after down succeeded, want it to report stopped components")
		}
	})

	t.Run("up after down starts afresh in the same directory", func(t *testing.T) {
		r := flotilla(t, "up", "--state-dir", dir, "--members", "1", "--member-mode", "apiserver-only")
		if r.err != nil || !strings.Contains(r.stdout, "Replacing the stopped environment") {
			t.Fatalf("up after down: err=%v stdout=%q", r.err, r.stdout)
		}
		if r := flotilla(t, "status", "--state-dir", dir); r.err != nil {
			t.Errorf("status of the new environment: %v", r.err)
		}
		r = flotilla(t, "down", "--purge", "--state-dir", dir)
		if r.err != nil {
			t.Fatalf("down --purge: %v", r.err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("state directory remains after down --purge (stat err %v)", err)
		}
	})
}

// TestBadInputFailsWithOneLine checks that invalid input is refused with one
// clear line before anything is created or started.
func TestBadInputFailsWithOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the flotilla binary")
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"negative members", []string{"--members", "-1"}, "--members must be between 0 and 64, got -1"},
		{"negative nodes", []string{"--nodes", "-2"}, "--nodes must not be negative, got -2"},
		{"unknown mode", []string{"--member-mode", "tiny"}, `--member-mode must be "full" or "apiserver-only"`},
		{"bad quantity", []string{"--node-cpu", "lots"}, `--node-cpu: "lots" is not a quantity`},
		{"bad label", []string{"--node-labels", "bad key=x"}, `--node-labels: key "bad key"`},
		{"unwritable state dir", []string{"--state-dir", "/proc/flotilla"}, "state directory /proc/flotilla is not usable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "env")
			args := append([]string{"up", "--state-dir", dir}, tt.args...)
			r := flotilla(t, args...)
			if r.err == nil {
				t.Fatalf("up %v succeeded, want an error", tt.args)
			}
			if !oneErrorLine(r.stderr, tt.wantErr) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tt.wantErr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("state directory was created (stat err %v); nothing should be", err)
			}
		})
	}
}

func oneErrorLine(stderr, want string) bool {
	s := strings.TrimRight(stderr, "\n")
	return !strings.Contains(s, "\n") && strings.HasPrefix(s, "error: ") && strings.Contains(s, want)
}

// processRunning reports whether pid is a live process (zombies, which only
// wait to be reaped, do not count).
func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestClusterVerbsRefuseBadInput checks the cluster verbs' input checks,
// which run before any cluster is contacted.
func TestClusterVerbsRefuseBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the flotilla binary")
	}
	nowhere := filepath.Join(t.TempDir(), "missing.kubeconfig")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"join without kubeconfig", []string{"join", "edge-1"}, "--kubeconfig is required"},
		{"join bad name", []string{"join", "Edge_1", "--kubeconfig", nowhere}, `invalid member name "Edge_1"`},
		{"join bad label", []string{"join", "edge-1", "--kubeconfig", nowhere, "--labels", "bad key=x"}, `invalid label key "bad key"`},
		{"join missing kubeconfig file", []string{"join", "edge-1", "--kubeconfig", nowhere}, "member kubeconfig"},
		{"unknown controller", []string{"controller-manager", "--controllers", "*,-nope"}, `unknown controller "nope" (known: agent-signer, autoscale, cluster, federate, interpreters, migrate, propagate, rollout, schedule, status)`},
		{"renew deadline too long", []string{"controller-manager", "--leader-elect-renew-deadline", "20s"}, "must be shorter than --leader-elect-lease-duration"},
		{"zero probe interval", []string{"controller-manager", "--cluster-probe-interval", "0s"}, "--cluster-probe-interval must be positive"},
		{"signing cert without key", []string{"controller-manager", "--agent-signing-cert-file", nowhere}, "--agent-signing-cert-file and --agent-signing-key-file go together"},
		{"agent with two credentials", []string{"agent", "--cluster", "edge-1", "--hub-kubeconfig", nowhere, "--bootstrap-kubeconfig", nowhere}, "give one of --bootstrap-kubeconfig"},
		{"pull join, one file for both", []string{"join", "edge-1", "--mode", "pull", "--agent-kubeconfig", nowhere, "--bootstrap-kubeconfig", nowhere}, "must name different files"},
		{"accept without a name", []string{"accept"}, "accepts 1 arg(s), received 0"},
		{"restricted join, wildcard", []string{"join", "edge-1", "--kubeconfig", nowhere, "--restrict-kinds", "*"}, `--restrict-kinds: invalid kind "*"`},
		{"restricted join, empty list", []string{"join", "edge-1", "--kubeconfig", nowhere, "--restrict-kinds", ","}, "--restrict-kinds names no resource"},
		{"restricted pull join", []string{"join", "edge-1", "--mode", "pull", "--restrict-kinds", "configmaps"}, "--restrict-kinds are for push members"},
		{"push token too short", []string{"join", "edge-1", "--kubeconfig", nowhere, "--token-duration", "1m"}, "--token-duration must be at least 10m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := flotilla(t, tt.args...)
			if r.err == nil {
				t.Fatalf("flotilla %v succeeded, want an error", tt.args)
			}
			if !oneErrorLine(r.stderr, tt.wantErr) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tt.wantErr)
			}
		})
	}
}
