package pull

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// TestFederatedHPAThroughTheGateway: an HPA applied through the gateway
// for a Deployment divided over the three members (two push, one pull,
// whose agent reports the usage); load simulated on the pods of one
// member (kwok's usage annotation, read by each member's metrics-server)
// scales the host Deployment up and the new replicas are divided over
// every member; without the load it scales back down after its
// stabilization window. The times are logged (docs/benchmarks.md).
func TestFederatedHPAThroughTheGateway(t *testing.T) {
	ns := "autoscale"
	applyDivided(t, ns, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
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
        image: example.com/api:1
        resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 3
  maxReplicas: 12
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 20}`, "{apiVersion: apps/v1, kind: Deployment, name: api}", push, push2, pull)
	kubectlGateway(t, "rollout", "status", "deployment/api", "-n", ns, "--timeout=3m")
	replicas := func() int {
		n, _ := strconv.Atoi(kubectlGateway(t, "get", "deployment/api", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
		return n
	}
	eventually(t, "the HPA reads every member's usage, the pull member's from its agent", func(context.Context) error {
		out := kubectlGateway(t, "get", "hpa", "api", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="ScalingActive")].status} {.status.conditions[?(@.type=="ScalingActive")].message}`)
		if !strings.HasPrefix(out, "True ") || strings.Contains(out, "left out") {
			return fmt.Errorf("ScalingActive %q", out)
		}
		return nil
	})

	start := time.Now()
	kubectlMember(t, push, "annotate", "pods", "-n", ns, "-l", "app=api", "--overwrite", localenv.AnnotationUsageCPU+"=300m")
	eventually(t, "scaled up, the new replicas on every member", func(context.Context) error {
		if n := replicas(); n < 6 {
			return fmt.Errorf("host replicas %d", n)
		}
		per := map[string]int{}
		for _, m := range []string{push, push2, pull} {
			per[m], _ = strconv.Atoi(kubectlMember(t, m, "get", "deployment/api", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
			if per[m] < 2 {
				return fmt.Errorf("members %v", per)
			}
		}
		return nil
	})
	up := time.Since(start)
	if out := kubectlGateway(t, "get", "hpa", "api", "-n", ns); !strings.Contains(out, "/50%") {
		t.Errorf("kubectl get hpa shows no target column:\n%s", out)
	}

	start = time.Now()
	kubectlMember(t, push, "annotate", "pods", "-n", ns, "-l", "app=api", "--overwrite", localenv.AnnotationUsageCPU+"=1m")
	eventually(t, "back to minReplicas", func(context.Context) error {
		if n := replicas(); n != 3 {
			return fmt.Errorf("host replicas %d", n)
		}
		return nil
	})
	t.Logf("federated HPA over 3 members (one pull): scaled up %s after the load, back to 3 replicas %s after it ended (window 20 s, metrics every 10 s, evaluation every 15 s)",
		up.Round(time.Second), time.Since(start).Round(time.Second))
}
