package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// simLabel marks the nodes TestSimulatedScheduling adds; they are tainted
// with it too, so only its workloads (which tolerate it and select it) use
// them.
const simLabel = "e2e.flotilla.io/sim"

// addSimNodes adds count kwok nodes of cpu cores each to a member, named
// after prefix, and waits until they are Ready and the hub counts them;
// they are deleted when the test ends.
func addSimNodes(t *testing.T, host client.Client, cs kubernetes.Interface, member, prefix string, count int, cpu string) {
	t.Helper()
	ctx := context.Background()
	for i := range count {
		name := fmt.Sprintf("%s-%s-%d", member, prefix, i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels:      map[string]string{simLabel: "true", "kubernetes.io/hostname": name, "type": "kwok"},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: simLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create node %s in %s: %v", name, member, err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	eventually(t, fmt.Sprintf("%d sim nodes Ready in %s", count, member), func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simLabel})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != count {
			return fmt.Errorf("%d of %d Ready", ready, count)
		}
		return nil
	})
	// The hub's node cache of the member has them (and no longer has the
	// nodes of an earlier test) before anything is placed on them.
	eventually(t, fmt.Sprintf("the hub counting %s's nodes", member), func(ctx context.Context) error {
		all, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		mc := &v1alpha1.MemberCluster{}
		if err := host.Get(ctx, client.ObjectKey{Name: member}, mc); err != nil {
			return err
		}
		if int(mc.Status.NodeCount) != len(all.Items) {
			return fmt.Errorf("status counts %d nodes, the member has %d", mc.Status.NodeCount, len(all.Items))
		}
		return nil
	})
}

// simDeployment is a Deployment whose pods request cpu and may run only on
// the sim nodes.
func simDeployment(ns, name string, replicas int, cpu string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {sim: "true"}
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      nodeSelector: {%[5]s: "true"}
      tolerations: [{key: %[5]s, operator: Exists, effect: NoSchedule}]
      containers:
      - name: app
        image: example.com/app:1
        resources: {requests: {cpu: "%[4]s"}}
`, ns, name, replicas, cpu, simLabel)
}

// applySim creates a namespace with objects and a policy that divides its
// Deployments labelled sim=true over the two push members with Binpack,
// under the profile that adds ResourceFit.
func applySim(t *testing.T, ns, objects string) {
	t.Helper()
	applySimPlacement(t, ns, objects, "schedulingProfile: e2e-fit\n    replicaScheduling: {type: Divide, weightMode: Binpack}")
}

// applySimPlacement is applySim with the placement's other fields given.
func applySimPlacement(t *testing.T, ns, objects, placement string) {
	t.Helper()
	manifest := writeManifest(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: sim
  namespace: %[1]s
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {sim: "true"}}}
  placement:
    clusterNames: [%[3]s, %[4]s]
    %[5]s
---
%[2]s
`, ns, strings.TrimSpace(objects), push, push2, placement))
	kubectlGateway(t, "apply", "-f", manifest)
}

// deleteSimNamespace deletes ns and waits until its pods are gone from the
// members (their room is free again).
func deleteSimNamespace(t *testing.T, members map[string]kubernetes.Interface, ns string) {
	t.Helper()
	_, _ = kubectlGatewayErr("delete", "namespace", ns, "--wait=false")
	eventually(t, "the pods of "+ns+" gone from the members", func(ctx context.Context) error {
		for _, m := range []string{push, push2} {
			pods, err := members[m].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d pods left in %s", len(pods.Items), m)
			}
		}
		return nil
	})
}

// simPods counts a namespace's pods per member: bound and Running, and
// Pending because the member's scheduler found no node with room
// (PodScheduled False, Unschedulable); pods not looked at yet count in
// neither.
func simPods(ctx context.Context, members map[string]kubernetes.Interface, ns string) (running, pending map[string]int, err error) {
	running, pending = map[string]int{}, map[string]int{}
	for _, m := range []string{push, push2} {
		pods, err := members[m].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		for _, p := range pods.Items {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning:
				running[m]++
			case p.Spec.NodeName == "" && unschedulable(&p):
				pending[m]++
			}
		}
	}
	return running, pending, nil
}

// TestSimulatedScheduling places workloads on members with uneven node
// shapes: member-1 gets eight 1-core nodes, member-2 two 8-core nodes. A
// workload of 4-core pods goes only to member-2, and the decision says
// why member-1 is left out although its sums show plenty of free cores; 20
// workloads created in one burst never over-commit a member (no Pending
// pod); replicas that fit nowhere gather in the elastic member.
func TestSimulatedScheduling(t *testing.T) {
	host, members := clients(t)
	addSimNodes(t, host, members[push], push, "sim", 8, "1")
	addSimNodes(t, host, members[push2], push2, "sim", 2, "8")
	profile := writeManifest(t, `apiVersion: flotilla.io/v1alpha1
kind: SchedulingProfile
metadata:
  name: e2e-fit
spec:
  plugins:
    filter:
      enabled: [{name: ResourceFit}]
`)
	kubectlGateway(t, "apply", "-f", profile)
	t.Cleanup(func() { _, _ = kubectlGatewayErr("delete", "schedulingprofile", "e2e-fit") })

	t.Run("large pods go where a node holds them", func(t *testing.T) {
		ns := "sim-large"
		applySim(t, ns, simDeployment(ns, "big", 3, "4"))
		var msg string
		eventually(t, "big placed on member-2 alone, the decision explaining member-1", func(ctx context.Context) error {
			fo, err := federatedObjectOf(ctx, host, ns, "big")
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
			if fo.Status.Placement != push2+"=3" || c == nil {
				return fmt.Errorf("placement %q, Scheduled %+v", fo.Status.Placement, c)
			}
			msg = c.Message
			return nil
		})
		for _, want := range []string{"no node fits a replica (most free on one node: cpu 1)", push + " fits 0 of 3"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Scheduled message %q does not say %q", msg, want)
			}
		}
		t.Logf("Scheduled: %s", msg)
		eventually(t, "3 big pods Running in member-2", func(ctx context.Context) error {
			running, pending, err := simPods(ctx, members, ns)
			if err != nil {
				return err
			}
			if running[push2] != 3 || running[push] != 0 || pending[push]+pending[push2] != 0 {
				return fmt.Errorf("running %v, pending %v", running, pending)
			}
			return nil
		})
		deleteSimNamespace(t, members, ns)
	})

	t.Run("a burst of 20 workloads over-commits nobody", func(t *testing.T) {
		// 20 one-core replicas; member-1's nodes hold 8, member-2's 16.
		ns := "sim-burst"
		var objects []string
		for i := range 20 {
			objects = append(objects, simDeployment(ns, fmt.Sprintf("w%02d", i), 1, "1"))
		}
		applySim(t, ns, strings.Join(objects, "---\n"))
		eventually(t, "20 pods Running and none Pending", func(ctx context.Context) error {
			running, pending, err := simPods(ctx, members, ns)
			if err != nil {
				return err
			}
			if pending[push]+pending[push2] > 0 {
				// The members' schedulers had no room: the scheduler
				// counted the same free cores twice.
				t.Fatalf("Pending pods: %v (running %v)", pending, running)
			}
			if running[push]+running[push2] != 20 {
				return fmt.Errorf("running %v", running)
			}
			return nil
		})
		running, _, _ := simPods(context.Background(), members, ns)
		t.Logf("burst placed %v", running)
		eventually(t, "the reservations released once the pods are bound", func(ctx context.Context) error {
			for _, m := range []string{push, push2} {
				mc := &v1alpha1.MemberCluster{}
				if err := host.Get(ctx, client.ObjectKey{Name: m}, mc); err != nil {
					return err
				}
				if len(mc.Status.Resources.Reserved) > 0 {
					return fmt.Errorf("%s still reserves %v", m, mc.Status.Resources.Reserved)
				}
			}
			return nil
		})
		deleteSimNamespace(t, members, ns)
	})

	t.Run("replicas that fit nowhere gather in the elastic member", func(t *testing.T) {
		kubectlGateway(t, "label", "membercluster", push, v1alpha1.LabelElastic+"=true")
		t.Cleanup(func() { _, _ = kubectlGatewayErr("label", "membercluster", push, v1alpha1.LabelElastic+"-") })
		ns := "sim-gather"
		applySim(t, ns, simDeployment(ns, "many", 40, "1"))
		eventually(t, "member-2 filled to its 16, the other 24 in member-1", func(ctx context.Context) error {
			fo, err := federatedObjectOf(ctx, host, ns, "many")
			if err != nil {
				return err
			}
			if want := push + "=24," + push2 + "=16"; fo.Status.Placement != want {
				return fmt.Errorf("placement %q, want %q", fo.Status.Placement, want)
			}
			return nil
		})
		eventually(t, "16 Pending pods, all in member-1", func(ctx context.Context) error {
			running, pending, err := simPods(ctx, members, ns)
			if err != nil {
				return err
			}
			if running[push] != 8 || running[push2] != 16 || pending[push] != 16 || pending[push2] != 0 {
				return fmt.Errorf("running %v, pending %v", running, pending)
			}
			return nil
		})
		deleteSimNamespace(t, members, ns)
	})
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// federatedObjectOf returns the FederatedObject of a Deployment.
func federatedObjectOf(ctx context.Context, host client.Client, ns, name string) (*v1alpha1.FederatedObject, error) {
	list := &v1alpha1.FederatedObjectList{}
	if err := host.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if fo := &list.Items[i]; fo.Spec.Template.Kind == "Deployment" && fo.Spec.Template.Name == name {
			return fo, nil
		}
	}
	return nil, fmt.Errorf("no FederatedObject for Deployment %s/%s yet", ns, name)
}
