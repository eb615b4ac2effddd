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
// for a Deployment divided over the two push members; load simulated on
// the pods of one member (kwok's usage annotation, read by each member's
// metrics-server) scales the host Deployment up and the new replicas are
// divided over both members; without the load it scales back down after
// its stabilization window. The times are logged (docs/benchmarks.md).
func TestFederatedHPAThroughTheGateway(t *testing.T) {
	ns := "autoscale"
	applyDivided(t, ns, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 2
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
  minReplicas: 2
  maxReplicas: 8
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 20}`, "{apiVersion: apps/v1, kind: Deployment, name: api}", push, push2)
	kubectlGateway(t, "rollout", "status", "deployment/api", "-n", ns, "--timeout=3m")
	replicas := func() int {
		n, _ := strconv.Atoi(kubectlGateway(t, "get", "deployment/api", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
		return n
	}
	eventually(t, "the HPA reads the members' usage", func(context.Context) error {
		if out := kubectlGateway(t, "get", "hpa", "api", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="ScalingActive")].status}`); out != "True" {
			return fmt.Errorf("ScalingActive %q", out)
		}
		return nil
	})

	start := time.Now()
	kubectlMember(t, push, "annotate", "pods", "-n", ns, "-l", "app=api", "--overwrite", localenv.AnnotationUsageCPU+"=300m")
	eventually(t, "scaled up, the new replicas on both members", func(context.Context) error {
		if n := replicas(); n < 4 {
			return fmt.Errorf("host replicas %d", n)
		}
		a, _ := strconv.Atoi(kubectlMember(t, push, "get", "deployment/api", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
		b, _ := strconv.Atoi(kubectlMember(t, push2, "get", "deployment/api", "-n", ns, "-o", "jsonpath={.spec.replicas}"))
		if a < 2 || b < 2 {
			return fmt.Errorf("members %d and %d", a, b)
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
		if n := replicas(); n != 2 {
			return fmt.Errorf("host replicas %d", n)
		}
		return nil
	})
	t.Logf("federated HPA over 2 members: scaled up %s after the load, back to 2 replicas %s after it ended (window 20 s, metrics every 10 s, evaluation every 15 s)",
		up.Round(time.Second), time.Since(start).Round(time.Second))
}
