package pull

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// kubectlGateway runs kubectl against the host through the gateway, as
// the environment's admin, and returns its combined output.
func kubectlGateway(t *testing.T, args ...string) string {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed: %v", err)
	}
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", localenv.GatewayAdminKubeconfig(stateDir)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGatewayServesHostKinds drives the host through `flotilla gateway`
// with stock kubectl, as a user of `flotilla up` would: discovery, OpenAPI
// (explain), apply of a workload and its policy, `kubectl rollout status`
// on the federated Deployment, and delete; the audit log records the
// requests.
func TestGatewayServesHostKinds(t *testing.T) {
	if env == nil {
		t.Skip("no environment (-short)")
	}
	if out := kubectlGateway(t, "api-resources"); !strings.Contains(out, "memberclusters") || !strings.Contains(out, "deployments") {
		t.Errorf("kubectl api-resources through the gateway lacks memberclusters or deployments:\n%s", out)
	}
	if out := kubectlGateway(t, "explain", "memberclusters.spec.syncMode"); !strings.Contains(out, "syncMode") {
		t.Errorf("kubectl explain through the gateway:\n%s", out)
	}
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: gateway-e2e
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: gateway-e2e
spec:
  replicas: 3
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: registry.example.com/api:1.0
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: api
  namespace: gateway-e2e
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api}
  placement:
    replicaScheduling: {type: Divide}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("kubectl", "--kubeconfig", localenv.GatewayAdminKubeconfig(stateDir), "delete", "namespace", "gateway-e2e", "--wait=false").Run()
	})
	if out := kubectlGateway(t, "apply", "--server-side", "-f", manifest); !strings.Contains(out, "deployment.apps/api serverside-applied") {
		t.Errorf("kubectl apply through the gateway:\n%s", out)
	}
	if out := kubectlGateway(t, "rollout", "status", "deployment/api", "-n", "gateway-e2e", "--timeout=2m"); !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status through the gateway:\n%s", out)
	}
	if out := kubectlGateway(t, "get", "fo", "-n", "gateway-e2e"); !strings.Contains(out, "api.deployment.apps") {
		t.Errorf("kubectl get fo through the gateway:\n%s", out)
	}
	if out := kubectlGateway(t, "delete", "deployment", "api", "-n", "gateway-e2e"); !strings.Contains(out, "deleted") {
		t.Errorf("kubectl delete through the gateway:\n%s", out)
	}
	audit, err := os.ReadFile(filepath.Join(stateDir, "clusters", localenv.HostName, "logs", "gateway-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"verb":"delete"`) || !strings.Contains(string(audit), `"username":"admin"`) {
		t.Errorf("the gateway's audit log has no delete by admin (%d bytes)", len(audit))
	}
}
