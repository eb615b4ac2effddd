package pull

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// kubectlGatewayErr is kubectlGateway that returns the error instead of
// failing the test.
func kubectlGatewayErr(args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", localenv.GatewayAdminKubeconfig(stateDir)}, args...)...).CombinedOutput()
	return string(out), err
}

// TestGatewayServesMemberPods drives member pods through the gateway with
// stock kubectl: get -A -o wide with a CLUSTER column, get -w sees a new
// pod, logs, exec, port-forward and delete reach the member running the
// pod, describe node shows the node's pods. The pull member's pods come
// through its agent's tunnel: listed, logs, exec and port-forward too.
func TestGatewayServesMemberPods(t *testing.T) {
	if env == nil {
		t.Skip("no environment (-short)")
	}
	ns := "gateway-pods"
	manifest := writeManifest(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo
  namespace: %[1]s
spec:
  replicas: 6
  selector:
    matchLabels: {app: echo}
  template:
    metadata:
      labels: {app: echo}
    spec:
      containers:
      - name: echo
        image: registry.example.com/echo:1.0
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: echo
  namespace: %[1]s
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: echo}
  placement:
    clusterNames: [member-1, member-2, member-3]
    replicaScheduling: {type: Divide}
`, ns))
	t.Cleanup(func() { _, _ = kubectlGatewayErr("delete", "namespace", ns, "--wait=false") })
	kubectlGateway(t, "apply", "-f", manifest)
	kubectlGateway(t, "rollout", "status", "deployment/echo", "-n", ns, "--timeout=2m")

	var pods map[string]string // name -> cluster
	eventually(t, "6 Running echo pods listed with their members", func(context.Context) error {
		out, err := kubectlGatewayErr("get", "pods", "-A", "-o", "wide")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		pods = map[string]string{}
		var header []string
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 0 && f[0] == "NAMESPACE":
				header = f
			case len(f) > 4 && f[0] == ns && f[4] == "Running":
				pods[f[1]] = f[2]
			}
		}
		if len(header) < 3 || header[2] != "CLUSTER" || !strings.Contains(strings.Join(header, " "), "NODE") {
			return fmt.Errorf("header %v, want NAMESPACE NAME CLUSTER ... NODE", header)
		}
		if strings.Contains(out, "member-3 is left out") || strings.Contains(out, "member-3's agent") {
			return fmt.Errorf("the pull member is left out:\n%s", out)
		}
		per := map[string]int{}
		for _, c := range pods {
			per[c]++
		}
		if len(pods) != 6 || per["member-1"] == 0 || per["member-2"] == 0 || per["member-3"] == 0 {
			return fmt.Errorf("running echo pods %v, want 6 spread over member-1, member-2 and member-3\n%s", pods, out)
		}
		return nil
	})
	var pod, cluster, pulled string
	for p, c := range pods {
		switch c {
		case "member-2":
			pod, cluster = p, c
		case "member-3":
			pulled = p
		}
	}

	// The pull member's pod, through its agent's tunnel. (Its node's
	// addresses, which the member's apiserver dials for logs, may come a
	// moment after the pod runs.)
	eventually(t, "kubectl logs of "+pulled+" (pull member) through the gateway", func(context.Context) error {
		out, err := kubectlGatewayErr("logs", "-n", ns, pulled)
		if err != nil || !strings.Contains(out, "fake container of member member-3: serving") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out := kubectlGateway(t, "exec", "-n", ns, pulled, "--", "sh", "-c", "echo exec-ok in $FLOTILLA_MEMBER"); !strings.Contains(out, "exec-ok in member-3") {
		t.Errorf("kubectl exec %s (pull member) through the gateway:\n%s", pulled, out)
	}
	portForwardEchoes(t, ns, pulled)

	eventually(t, "kubectl logs of "+pod+" through the gateway", func(context.Context) error {
		out, err := kubectlGatewayErr("logs", "-n", ns, pod)
		if err != nil || !strings.Contains(out, "fake container of member "+cluster+": serving") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	var out string
	out = kubectlGateway(t, "exec", "-n", ns, pod, "--", "sh", "-c", "echo exec-ok in $FLOTILLA_MEMBER")
	if !strings.Contains(out, "exec-ok in "+cluster) {
		t.Errorf("kubectl exec %s through the gateway ran elsewhere than %s:\n%s", pod, cluster, out)
	}
	portForwardEchoes(t, ns, pod)

	out = kubectlGateway(t, "describe", "node", cluster+"-node-1")
	if !strings.Contains(out, pod) {
		t.Errorf("kubectl describe node %s-node-1 lacks pod %s:\n%s", cluster, pod, out)
	}

	// A watch sees the pod that replaces a deleted one.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := exec.CommandContext(ctx, "kubectl", "--kubeconfig", localenv.GatewayAdminKubeconfig(stateDir), "get", "pods", "-n", ns, "-w", "--output-watch-events")
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.Wait() }()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	// The initial list first, so that the deletion happens while watching.
	waitLine(t, lines, func(l string) bool { return strings.Contains(l, pod) })
	out = kubectlGateway(t, "delete", "pod", "-n", ns, pod)
	if !strings.Contains(out, "deleted") {
		t.Errorf("kubectl delete pod through the gateway:\n%s", out)
	}
	waitLine(t, lines, func(l string) bool {
		f := strings.Fields(l)
		return len(f) > 2 && f[0] == "ADDED" && f[1] != pod && pods[f[1]] == ""
	})
	if _, err := kubectlGatewayErr("get", "pod", "-n", ns, pod); err == nil {
		// kubectl delete waits for the pod to go; it is gone from the
		// member, so the cache follows.
		t.Errorf("pod %s still served after kubectl delete", pod)
	}
}

func waitLine(t *testing.T, lines <-chan string, match func(string) bool) {
	t.Helper()
	var seen []string
	deadline := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl get -w ended; saw:\n%s", strings.Join(seen, "\n"))
			}
			if match(l) {
				return
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("kubectl get -w: no matching line; saw:\n%s", strings.Join(seen, "\n"))
		}
	}
}

// portForwardEchoes forwards a local port to the pod through the gateway
// and checks that bytes come back (kwok's port-forward is an echo).
func portForwardEchoes(t *testing.T, ns, pod string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pf := exec.CommandContext(ctx, "kubectl", "--kubeconfig", localenv.GatewayAdminKubeconfig(stateDir), "port-forward", "-n", ns, "pod/"+pod, ":8080")
	stdout, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = pf.Wait() }()
	// "Forwarding from 127.0.0.1:PORT -> 8080"
	s := bufio.NewScanner(stdout)
	addr := ""
	for addr == "" && s.Scan() {
		if f := strings.Fields(s.Text()); len(f) >= 3 && f[0] == "Forwarding" && strings.HasPrefix(f[2], "127.0.0.1:") {
			addr = f[2]
		}
	}
	if addr == "" {
		t.Fatalf("kubectl port-forward printed no local address (%v)", s.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("ping through the gateway\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != "ping through the gateway\n" {
		t.Errorf("port-forward echo: %q (err %v)", got, err)
	}
}

// writeManifest writes a manifest to a temporary file and returns its path.
func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGatewayRBACProtectionAndOutage: through the gateway, a
// ServiceAccount allowed to read pods in one namespace sees that
// namespace's member pods and gets the usual 403 for all namespaces; a
// namespace annotated flotilla.io/deletion-protection=true refuses
// deletion; a member whose apiserver is SIGSTOPped does not stall
// `kubectl get pods -A`, whose answer still has the other member's pods.
func TestGatewayRBACProtectionAndOutage(t *testing.T) {
	if env == nil {
		t.Skip("no environment (-short)")
	}
	ns := "gateway-rbac"
	manifest := writeManifest(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  annotations: {flotilla.io/deletion-protection: "true"}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: %[1]s}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pod-reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: viewer, namespace: %[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: %[1]s}
spec:
  replicas: 2
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - {name: app, image: registry.example.com/app:1.0}
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: app, namespace: %[1]s}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: app}
  placement:
    clusterNames: [member-1, member-2, member-3]
    replicaScheduling: {type: Divide}
`, ns))
	t.Cleanup(func() {
		_, _ = kubectlGatewayErr("annotate", "namespace", ns, "flotilla.io/deletion-protection-")
		_, _ = kubectlGatewayErr("delete", "namespace", ns, "--wait=false")
	})
	kubectlGateway(t, "apply", "-f", manifest)
	viewer := "system:serviceaccount:" + ns + ":viewer"
	eventually(t, "the viewer sees the namespace's pods in both members", func(context.Context) error {
		out, err := kubectlGatewayErr("--as", viewer, "get", "pods", "-n", ns)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if strings.Count(out, " member-1 ") != 1 || strings.Count(out, " member-2 ") != 1 {
			return fmt.Errorf("want one pod per member:\n%s", out)
		}
		return nil
	})
	if out, err := kubectlGatewayErr("--as", viewer, "get", "pods", "-A"); err == nil ||
		!strings.Contains(out, `cannot list resource "pods" in API group "" at the cluster scope`) {
		t.Errorf("the viewer lists all namespaces: %v\n%s", err, out)
	}
	if out, err := kubectlGatewayErr("delete", "namespace", ns, "--wait=false"); err == nil || !strings.Contains(out, "protected from deletion") {
		t.Errorf("deleting a protected namespace through the gateway: %v\n%s", err, out)
	}

	resume := stop(t, "member-2", "kube-apiserver")
	start := time.Now()
	out, err := kubectlGatewayErr("get", "pods", "-A", "--request-timeout=20s")
	took := time.Since(start)
	resume()
	if err != nil || !strings.Contains(out, ns) || !strings.Contains(out, " member-1 ") {
		t.Errorf("kubectl get pods -A with member-2 stopped: %v (after %s)\n%s", err, took, out)
	}
	if took > 10*time.Second {
		t.Errorf("kubectl get pods -A with member-2 stopped took %s", took)
	}
}
