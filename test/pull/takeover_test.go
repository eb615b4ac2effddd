package pull

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// legacyApp is a Deployment and its HPA as each member ran them before
// the federation: replicas copies, an HPA that keeps them (min) under no
// load.
func legacyApp(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: legacy
  namespace: takeover
spec:
  replicas: %[1]d
  selector:
    matchLabels: {app: legacy}
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers:
      - name: legacy
        image: example.com/legacy:1
        resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: legacy
  namespace: takeover
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: legacy}
  minReplicas: %[1]d
  maxReplicas: %[2]d
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`, replicas, 2*replicas)
}

// TestHPATakeOverThroughTheGateway: a workload that ran in each of the
// three members (two push, one pull) with its own HPA (2, 3 and 4
// replicas) is adopted with flotilla.io/retain-replicas and given one
// federated HPA through the gateway, with the combined bounds and
// flotilla.io/conflict-resolution: adopt. The three member HPAs are
// deleted (the pull member's by its agent), the host's replicas become
// 9, and a census of every member's pods sees no pod asked for, started
// or stopped at any moment of the take-over.
func TestHPATakeOverThroughTheGateway(t *testing.T) {
	_, members := clients(t)
	counts := map[string]int{push: 2, push2: 3, pull: 4}
	for _, m := range []string{push, push2, pull} {
		kubectlMember(t, m, "create", "namespace", "takeover")
		kubectlMember(t, m, "apply", "-f", writeManifest(t, legacyApp(counts[m])))
	}
	t.Cleanup(func() {
		for _, m := range []string{push, push2, pull} {
			cs, _ := env.Cluster(m)
			_ = command("kubectl", "--kubeconfig", cs.Kubeconfig, "delete", "namespace", "takeover", "--wait=false").Run()
		}
	})
	eventually(t, "9 legacy pods ready in the members", func(ctx context.Context) error {
		for m, want := range counts {
			if err := testenv.DeploymentReady(ctx, members[m], "takeover", "legacy"); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			pods, err := members[m].CoreV1().Pods("takeover").List(ctx, metav1.ListOptions{LabelSelector: "app=legacy"})
			if err != nil {
				return err
			}
			if len(pods.Items) != want {
				return fmt.Errorf("%s: %d pods", m, len(pods.Items))
			}
		}
		return nil
	})
	census := testenv.WatchPods(t, members, "takeover", "app=legacy")
	if pods, ready := census.Now(); pods != 9 || ready != 9 {
		t.Fatalf("before the take-over: %d pods, %d ready; want 9 and 9", pods, ready)
	}

	// The host objects: the Deployment at the members' sum (every member
	// placed), adopted, its members' replicas retained; the HPA with the
	// combined bounds (9 to 18), taking the member HPAs over.
	host := legacyApp(9)
	host = strings.Replace(host, "  name: legacy\n  namespace: takeover\nspec:\n  replicas: 9", `  name: legacy
  namespace: takeover
  annotations: {flotilla.io/conflict-resolution: adopt, flotilla.io/retain-replicas: "true"}
spec:
  replicas: 9`, 1)
	host = strings.Replace(host, "kind: HorizontalPodAutoscaler\nmetadata:\n  name: legacy\n  namespace: takeover", "kind: HorizontalPodAutoscaler\nmetadata:\n  name: legacy\n  namespace: takeover\n  annotations: {flotilla.io/conflict-resolution: adopt}", 1)
	if !strings.Contains(host, "retain-replicas") || !strings.Contains(host, "maxReplicas: 18") || strings.Count(host, "conflict-resolution") != 2 {
		t.Fatalf("the host manifest was not built:\n%s", host)
	}
	start := time.Now()
	applyDivided(t, "takeover", host, "{apiVersion: apps/v1, kind: Deployment, name: legacy}", push, push2, pull)

	// The HPA shows the steps (AbleToScale=False, TakingOver) on the way.
	takenOver := func(ctx context.Context) error {
		out := kubectlGateway(t, "get", "hpa", "legacy", "-n", "takeover", "-o", `jsonpath={.status.conditions[?(@.type=="AbleToScale")].status} {.status.conditions[?(@.type=="AbleToScale")].message}`)
		if !strings.HasPrefix(out, "True") {
			return fmt.Errorf("AbleToScale %q", out)
		}
		for m := range counts {
			if _, err := members[m].AutoscalingV2().HorizontalPodAutoscalers("takeover").Get(ctx, "legacy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s's HPA: %v", m, err)
			}
		}
		if n, _ := strconv.Atoi(kubectlGateway(t, "get", "deployment/legacy", "-n", "takeover", "-o", "jsonpath={.spec.replicas}")); n != 9 {
			return fmt.Errorf("host replicas %d", n)
		}
		if out := kubectlGateway(t, "get", "deployment/legacy", "-n", "takeover", "-o", `jsonpath={.metadata.annotations.flotilla\.io/retain-replicas}`); out != "" {
			return fmt.Errorf("the host still retains the members' replicas: %q", out)
		}
		return nil
	}
	lastErr := ""
	eventually(t, "the three member HPAs taken over, the host at 9 replicas, the federated HPA able to scale", func(ctx context.Context) error {
		err := takenOver(ctx)
		if msg := fmt.Sprint(err); msg != lastErr {
			t.Logf("%s: %s", time.Since(start).Round(100*time.Millisecond), msg) // the steps, for the record
			lastErr = msg
		}
		return err
	})
	took := time.Since(start)
	var rec []map[string]any
	raw := kubectlGateway(t, "get", "hpa", "legacy", "-n", "takeover", "-o", `jsonpath={.metadata.annotations.flotilla\.io/taken-over}`)
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || len(rec) != 3 {
		t.Errorf("flotilla.io/taken-over = %q (%v), want the three member HPAs", raw, err)
	}
	for m, want := range counts {
		if managed := kubectlMember(t, m, "get", "deployment/legacy", "-n", "takeover", "-o", `jsonpath={.metadata.labels.flotilla\.io/managed}`); managed != "true" {
			t.Errorf("%s's Deployment is not managed by the federation after the take-over", m)
		}
		if n, _ := strconv.Atoi(kubectlMember(t, m, "get", "deployment/legacy", "-n", "takeover", "-o", "jsonpath={.spec.replicas}")); n != want {
			t.Errorf("%s runs %d replicas after the take-over, want %d", m, n, want)
		}
	}
	if err := census.Err(); err != nil {
		t.Fatal(err)
	}
	pods, ready := census.Worst()
	t.Logf("take-over of 3 member HPAs (from applying the host objects to AbleToScale=True): %s; %s", took.Round(100*time.Millisecond), census)
	if census.MostAsked() != 9 || pods != 9 || ready != 9 {
		t.Errorf("the take-over changed the pods: %s (want 9 asked, seen and ready throughout)", census)
	}
}
