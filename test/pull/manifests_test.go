package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// applyDivided applies, through the gateway, namespace ns, the objects
// (YAML documents, "---"-separated, created in ns) and a PropagationPolicy that
// divides what selector names ("{apiVersion: ..., kind: ..., name: ...}")
// over clusters; the namespace is deleted when the test ends.
func applyDivided(t *testing.T, ns, objects, selector string, clusters ...string) {
	t.Helper()
	manifest := writeManifest(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
%[2]s
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: divide
  namespace: %[1]s
spec:
  resourceSelectors:
  - %[3]s
  placement:
    clusterNames: [%[4]s]
    replicaScheduling: {type: Divide}
`, ns, strings.TrimSpace(objects), selector, strings.Join(clusters, ", ")))
	t.Cleanup(func() { _, _ = kubectlGatewayErr("delete", "namespace", ns, "--wait=false") })
	kubectlGateway(t, "apply", "-n", ns, "-f", manifest)
}

// waitHealthy waits until member cluster is Ready and untainted again
// and its nodes are Ready (after a test stopped and resumed its
// apiserver): the next tests expect every member so. (A kwok node marked
// NotReady meanwhile comes back without its addresses, so logs and exec
// of its pods fail from then on: tests that stop a member run after the
// gateway's.)
func waitHealthy(t *testing.T, host client.Client, cluster string) {
	t.Helper()
	cs, _ := env.Cluster(cluster)
	cfg, err := localenv.RESTConfig(cs.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	member := kubernetes.NewForConfigOrDie(cfg)
	eventually(t, cluster+"'s nodes Ready", func(ctx context.Context) error {
		nodes, err := member.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			if !ready {
				return fmt.Errorf("node %s not Ready", n.Name)
			}
		}
		return nil
	})
	eventually(t, cluster+" Ready again and untainted", func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := host.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return err
		}
		if len(mc.Spec.Taints) > 0 {
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		}
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
}
