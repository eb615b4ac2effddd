package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestMemberClusters drives the member inventory as an operator does: up,
// inspect, break members, repair them, register bad ones, join and unjoin.
func TestMemberClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts environments")
	}
	f := startFed(t)
	ctx := context.Background()

	t.Run("up lists Ready members with their nodes and cpu", func(t *testing.T) {
		list := &v1alpha1.MemberClusterList{}
		if err := f.host.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 3 {
			t.Fatalf("%d MemberClusters, want 3", len(list.Items))
		}
		for _, mc := range list.Items {
			nodes, err := f.typed[mc.Name].CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cpu := resource.Quantity{}
			for _, n := range nodes.Items {
				cpu.Add(n.Status.Allocatable[corev1.ResourceCPU])
			}
			testenv.Eventually(t, 30*time.Second, mc.Name+" capacity", func(ctx context.Context) error {
				got, err := f.mc(ctx, mc.Name)
				if err != nil {
					return err
				}
				avail := got.Status.Resources.Available[corev1.ResourceCPU]
				if int(got.Status.NodeCount) != len(nodes.Items) || avail.Cmp(cpu) != 0 {
					return fmt.Errorf("nodes %d (member has %d), available cpu %s (member has %s)", got.Status.NodeCount, len(nodes.Items), avail.String(), cpu.String())
				}
				return nil
			})
		}
		// The columns `kubectl get memberclusters` prints.
		table := getTable(t, f, "/apis/flotilla.io/v1alpha1/memberclusters")
		for _, want := range []string{"Ready", "Version", "Nodes", "CPU-Available", "Memory-Available", "Age"} {
			if !strings.Contains(table, want) {
				t.Errorf("printer columns lack %s:\n%s", want, table)
			}
		}
		if strings.Count(table, `"True"`) != 3 {
			t.Errorf("want 3 Ready=True rows:\n%s", table)
		}
	})

	t.Run("pods in a member lower its available cpu", func(t *testing.T) {
		before, _ := f.mc(ctx, "member-1")
		want := before.Status.Resources.Available[corev1.ResourceCPU].DeepCopy()
		want.Sub(resource.MustParse("2"))
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-capacity"}}
		if _, err := f.typed["member-1"].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		dep := testenv.MakeDeployment("burn", ns.Name).Replicas(2).CPU("1").Obj()
		if _, err := f.typed["member-1"].AppsV1().Deployments(ns.Name).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		testenv.Eventually(t, 30*time.Second, "available cpu "+want.String(), func(ctx context.Context) error {
			mc, err := f.mc(ctx, "member-1")
			if err != nil {
				return err
			}
			if got := mc.Status.Resources.Available[corev1.ResourceCPU]; got.Cmp(want) != 0 {
				return fmt.Errorf("available cpu %s", got.String())
			}
			return nil
		})
		t.Logf("available cpu followed the pods in %s", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("killed apiserver: unreachable, then Ready after up restarts it", func(t *testing.T) {
		api := f.component(t, "member-3", components.KubeAPIServer)
		if err := syscall.Kill(api.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		took := f.waitReady(t, "member-3", metav1.ConditionUnknown, v1alpha1.TaintUnreachable, 60*time.Second)
		t.Logf("member-3 unreachable and tainted %s after SIGKILL", took.Round(time.Second))
		if r := flotilla(t, "up", "--state-dir", f.dir); r.err != nil || !strings.Contains(r.stdout, "restarted member-3 kube-apiserver") {
			t.Fatalf("up did not restart the apiserver: err=%v\n%s", r.err, r.stdout)
		}
		took = f.waitReady(t, "member-3", metav1.ConditionTrue, "", 60*time.Second)
		t.Logf("member-3 Ready and untainted %s after restart", took.Round(time.Second))
	})

	t.Run("stopped apiserver: unreachable, then Ready after SIGCONT", func(t *testing.T) {
		api := f.component(t, "member-2", components.KubeAPIServer)
		if err := syscall.Kill(api.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(api.PID, syscall.SIGCONT)
		took := f.waitReady(t, "member-2", metav1.ConditionUnknown, v1alpha1.TaintUnreachable, 60*time.Second)
		t.Logf("member-2 unreachable and tainted %s after SIGSTOP", took.Round(time.Second))
		if err := syscall.Kill(api.PID, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		took = f.waitReady(t, "member-2", metav1.ConditionTrue, "", 60*time.Second)
		t.Logf("member-2 Ready and untainted %s after SIGCONT", took.Round(time.Second))
	})

	t.Run("bad members get clear conditions and do not disturb the others", func(t *testing.T) {
		m1, _ := f.st.Cluster("member-1")
		m1cfg, err := localenv.RESTConfig(m1.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		token := func(s string) map[string][]byte { return map[string][]byte{"token": []byte(s), "ca.crt": m1cfg.CAData} }
		for name, spec := range map[string]struct {
			endpoint string
			data     map[string][]byte
		}{
			"e2e-unreachable": {"https://127.0.0.1:1", token("x")},
			"e2e-badtoken":    {m1.Server, token("wrong")},
		} {
			// Bound to its MemberCluster by the label, as hand-made Secrets must be.
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.SystemNamespace,
				Labels: map[string]string{v1alpha1.LabelMemberCluster: name}}, Data: spec.data}
			mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.MemberClusterSpec{APIEndpoint: spec.endpoint, SecretRef: &v1alpha1.SecretReference{Name: name}}}
			for _, o := range []client.Object{secret, mc} {
				if err := f.host.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = f.host.Delete(ctx, o) })
			}
		}
		for name, want := range map[string]string{"e2e-unreachable": "ClusterUnreachable", "e2e-badtoken": "Unauthorized"} {
			testenv.Eventually(t, 30*time.Second, name+" reason "+want, func(ctx context.Context) error {
				mc, err := f.mc(ctx, name)
				if err != nil {
					return err
				}
				c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
				if c == nil || c.Reason != want || c.Message == "" {
					return fmt.Errorf("Ready condition %+v", c)
				}
				return nil
			})
		}
		// Nothing is rewritten over three probe intervals (no hot loop), the
		// real members stay Ready and the controller-manager keeps running.
		list := &v1alpha1.MemberClusterList{}
		if err := f.host.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		noWrites(t, f, list, 15*time.Second)
		for _, m := range []string{"member-1", "member-2", "member-3"} {
			f.waitReady(t, m, metav1.ConditionTrue, "", 5*time.Second)
		}
		cm := f.component(t, localenv.HostName, localenv.ControllerManager)
		if !processRunning(cm.PID) {
			t.Fatalf("controller-manager (pid %d) is not running", cm.PID)
		}
	})

	t.Run("invalid specs are refused at admission", func(t *testing.T) {
		for _, tc := range []struct {
			spec v1alpha1.MemberClusterSpec
			want string
		}{
			{v1alpha1.MemberClusterSpec{APIEndpoint: "ftp://example.com", SecretRef: &v1alpha1.SecretReference{Name: "x"}}, "apiEndpoint must be an absolute http(s) URL"},
			{v1alpha1.MemberClusterSpec{APIEndpoint: "https://10.0.0.1:6443"}, "secretRef is required"},
			{v1alpha1.MemberClusterSpec{APIEndpoint: "https://10.0.0.1:6443", SecretRef: &v1alpha1.SecretReference{Name: "x"},
				Taints: []corev1.Taint{{Key: "a", Effect: "Sometimes"}}}, "taint effect must be"},
			{v1alpha1.MemberClusterSpec{APIEndpoint: "https://10.0.0.1:6443", SecretRef: &v1alpha1.SecretReference{Name: "x"},
				Taints: []corev1.Taint{{Effect: corev1.TaintEffectNoSchedule}}}, "taint key must be 1 to 316 characters"},
			{v1alpha1.MemberClusterSpec{APIEndpoint: "https://10.0.0.1:6443", SecretRef: &v1alpha1.SecretReference{Name: "Not_A_Name"}}, "spec.secretRef.name"},
		} {
			err := f.host.Create(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "e2e-invalid"}, Spec: tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				_ = f.host.Delete(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "e2e-invalid"}})
				t.Errorf("create %+v: err = %v, want %q", tc.spec, err, tc.want)
			}
		}
	})

	t.Run("controller-manager serves health and metrics", func(t *testing.T) {
		cm := f.component(t, localenv.HostName, localenv.ControllerManager)
		if body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", cm.Ports[1])); body != "ok" {
			t.Errorf("/healthz = %q", body)
		}
		metrics := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", cm.Ports[0]))
		for _, want := range []string{`flotilla_member_cluster_ready{cluster="member-1"} 1`, `controller_runtime_reconcile_total{controller="cluster"`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("a restarted controller-manager writes nothing", func(t *testing.T) {
		// Let every member's status settle (a just re-joined member fills in
		// its version and capacity a moment after it turns Ready).
		list := &v1alpha1.MemberClusterList{}
		testenv.Eventually(t, 30*time.Second, "all MemberClusters fully observed", func(ctx context.Context) error {
			if err := f.host.List(ctx, list); err != nil {
				return err
			}
			for _, mc := range list.Items {
				if mc.Status.KubernetesVersion == "" || mc.Status.NodeCount == 0 || len(mc.Status.APIResources) == 0 {
					return fmt.Errorf("%s: version %q, %d nodes, %d API resources", mc.Name, mc.Status.KubernetesVersion, mc.Status.NodeCount, len(mc.Status.APIResources))
				}
			}
			return nil
		})
		cm := f.component(t, localenv.HostName, localenv.ControllerManager)
		if err := syscall.Kill(cm.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if r := flotilla(t, "up", "--state-dir", f.dir); r.err != nil {
			t.Fatalf("up: %v", r.err)
		}
		cm = f.component(t, localenv.HostName, localenv.ControllerManager)
		// Wait until the new process has taken the lease and reconciled every
		// member, then watch for writes over three probe intervals.
		testenv.Eventually(t, 60*time.Second, "new controller-manager reconciled all members", func(ctx context.Context) error {
			n := reconcileCount(httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", cm.Ports[0])))
			if n < len(list.Items) {
				return fmt.Errorf("%d successful reconciles", n)
			}
			return nil
		})
		noWrites(t, f, list, 15*time.Second)
	})

	t.Run("a standby controller-manager takes over when the leader stops", func(t *testing.T) {
		logPath := filepath.Join(t.TempDir(), "standby.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer logFile.Close()
		standby := exec.Command(flotillaBin, "controller-manager", "--kubeconfig", f.kubeconfig(localenv.HostName),
			"--metrics-bind-address=0", "--health-probe-bind-address=0")
		standby.Stdout, standby.Stderr = logFile, logFile
		if err := standby.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- standby.Wait() }()
		defer func() { _ = standby.Process.Kill(); <-exited }()
		logHas := func(s string) func(context.Context) error {
			return func(context.Context) error {
				b, _ := os.ReadFile(logPath)
				if !strings.Contains(string(b), s) {
					return fmt.Errorf("standby log lacks %q:\n%s", s, b)
				}
				return nil
			}
		}
		testenv.Eventually(t, 30*time.Second, "standby waiting for the lease", logHas("Attempting to acquire leader lease"))
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "Successfully acquired lease") {
			t.Fatalf("standby became leader while the leader runs:\n%s", b)
		}
		leader := f.component(t, localenv.HostName, localenv.ControllerManager)
		if err := syscall.Kill(leader.PID, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		// The leader releases the lease on SIGTERM, so the standby need not
		// wait for it to expire (15 s).
		testenv.Eventually(t, 10*time.Second, "standby leading", logHas("Successfully acquired lease"))
		t.Logf("standby took over %s after SIGTERM to the leader", time.Since(start).Round(100*time.Millisecond))
		testenv.Eventually(t, 30*time.Second, "old leader exited", func(context.Context) error {
			if processRunning(leader.PID) {
				return fmt.Errorf("pid %d still running", leader.PID)
			}
			return nil
		})
		// Hand back: stop the standby, let up restart the original.
		if err := standby.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-exited; err != nil {
			t.Errorf("standby exited with %v after SIGTERM, want a clean exit", err)
		}
		exited <- nil
		if r := flotilla(t, "up", "--state-dir", f.dir); r.err != nil {
			t.Fatalf("up: %v", r.err)
		}
	})

	t.Run("join, unjoin and join again with the CLI", func(t *testing.T) {
		host := "--host-kubeconfig=" + f.kubeconfig(localenv.HostName)
		if r := flotilla(t, "unjoin", "member-2", host); r.err != nil {
			t.Fatalf("unjoin: %v", r.err)
		}
		if _, err := f.mc(ctx, "member-2"); err == nil {
			t.Fatal("MemberCluster member-2 still exists after unjoin")
		}
		if r := flotilla(t, "join", "member-2", "--kubeconfig", f.kubeconfig("member-2"), host, "--labels", "topology.kubernetes.io/region=us-east", "--wait", "60s"); r.err != nil {
			t.Fatalf("join again: %v", r.err)
		}
		f.waitReady(t, "member-2", metav1.ConditionTrue, "", 5*time.Second)
		// A second control plane (member-3 given the CRDs) may not take
		// member-1, which this one owns.
		installCRDs(t, f.kubeconfig("member-3"))
		r := flotilla(t, "join", "stolen", "--kubeconfig", f.kubeconfig("member-1"), "--host-kubeconfig="+f.kubeconfig("member-3"))
		if r.err == nil || !oneErrorLine(r.stderr, "joined to another Flotilla control plane") {
			t.Fatalf("join to a second control plane: err=%v stderr=%q", r.err, r.stderr)
		}
	})
}
