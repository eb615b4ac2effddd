package pull

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// rollingWeb is a Deployment of 30 replicas rolling with maxSurge 3 and
// maxUnavailable 3, whose pods turn Ready 2 s after they start, so that
// a rollout takes observable time.
const rollingWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 30
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 3, maxUnavailable: 3}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {` + localenv.AnnotationPodReadyDelay + `: 2s}
    spec:
      containers:
      - name: web
        image: example.com/web:1`

// kubectlMember runs kubectl against a member directly, as its admin.
func kubectlMember(t *testing.T, member string, args ...string) string {
	t.Helper()
	cs, _ := env.Cluster(member)
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", cs.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s on %s: %v\n%s", strings.Join(args, " "), member, err, out)
	}
	return string(out)
}

// TestFederatedRolloutBudget: the 30-replica Deployment divided over the
// three members (two push, one pull) is updated through the gateway; a
// watch on every member's pods sees at no moment more than 33 pods or
// fewer than 27 ready ones, and `kubectl rollout status` on the host
// returns when every member is done. The same Deployment on one member
// alone is rolled the same way for comparison; both times are logged
// (docs/benchmarks.md).
func TestFederatedRolloutBudget(t *testing.T) {
	_, members := clients(t)
	ns := "rollout-budget"
	applyDivided(t, ns, rollingWeb, "{apiVersion: apps/v1, kind: Deployment, name: web}", push, push2, pull)
	kubectlGateway(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=3m")
	census := testenv.WatchPods(t, members, ns, "app=web")
	if pods, ready := census.Now(); pods != 30 || ready != 30 {
		t.Fatalf("before the update: %d pods, %d ready in the members; want 30 and 30", pods, ready)
	}
	start := time.Now()
	kubectlGateway(t, "set", "image", "deployment/web", "-n", ns, "web=example.com/web:2")
	out := kubectlGateway(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=5m")
	federated := time.Since(start)
	if !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status on the host:\n%s", out)
	}
	if pods, ready := census.Now(); pods != 30 || ready != 30 {
		t.Errorf("when kubectl rollout status returned: %d pods, %d ready in the members; want 30 and 30", pods, ready)
	}
	if maxPods, minReady := census.Worst(); maxPods > 33 || minReady < 27 {
		t.Errorf("the budget was exceeded across the members: %s; want at most 33 pods and at least 27 ready", census)
	}
	if fo := kubectlGateway(t, "get", "fo", "web.deployment.apps", "-n", ns, "-o", "jsonpath={.status.conditions[?(@.type==\"RolledOut\")].reason}"); fo != "RolledOut" {
		t.Errorf("RolledOut reason %q, want RolledOut", fo)
	}

	// The same Deployment on one member alone.
	alone := "rollout-alone"
	kubectlMember(t, push, "create", "namespace", alone)
	t.Cleanup(func() {
		_ = exec.Command("kubectl", "--kubeconfig", mustKubeconfig(push), "delete", "namespace", alone, "--wait=false").Run()
	})
	manifest := writeManifest(t, rollingWeb)
	kubectlMember(t, push, "apply", "-n", alone, "-f", manifest)
	kubectlMember(t, push, "rollout", "status", "deployment/web", "-n", alone, "--timeout=3m")
	start = time.Now()
	kubectlMember(t, push, "set", "image", "deployment/web", "-n", alone, "web=example.com/web:2")
	kubectlMember(t, push, "rollout", "status", "deployment/web", "-n", alone, "--timeout=5m")
	single := time.Since(start)
	t.Logf("rollout of 30 replicas (maxSurge 3, maxUnavailable 3, pods Ready 2 s after start): federated over 3 members %s (%s), one member alone %s, ratio %.2f",
		federated.Round(100*time.Millisecond), census, single.Round(100*time.Millisecond), federated.Seconds()/single.Seconds())
}

// mustKubeconfig is a member's admin kubeconfig.
func mustKubeconfig(member string) string {
	cs, _ := env.Cluster(member)
	return cs.Kubeconfig
}
