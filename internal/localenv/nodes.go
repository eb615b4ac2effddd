package localenv

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// nodeSpec describes the fake nodes of one member.
type nodeSpec struct {
	member            string
	count             int
	cpu, memory, pods string
	region, zone      string
	extraLabels       map[string]string
}

// fakeNodes renders the kwok nodes of a member. Their names carry the member
// name so that they stay unique across the environment.
func fakeNodes(s nodeSpec) []*corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(s.cpu),
		corev1.ResourceMemory: resource.MustParse(s.memory),
		corev1.ResourcePods:   resource.MustParse(s.pods),
	}
	nodes := make([]*corev1.Node, 0, s.count)
	for i := 1; i <= s.count; i++ {
		name := fmt.Sprintf("%s-node-%d", s.member, i)
		labels := map[string]string{
			"type":                   "kwok",
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			LabelRegion:              s.region,
			LabelZone:                s.zone,
		}
		for k, v := range s.extraLabels {
			labels[k] = v
		}
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: labels,
				Annotations: map[string]string{
					kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0",
					// metrics-server scrapes kwok's simulated kubelet metrics of the node there (metrics.go).
					AnnotationResourceMetricsPath: "/metrics/nodes/" + name + "/metrics/resource",
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    capacity.DeepCopy(),
				Allocatable: capacity.DeepCopy(),
				NodeInfo: corev1.NodeSystemInfo{
					Architecture:    "amd64",
					OperatingSystem: "linux",
					KubeletVersion:  "kwok",
				},
			},
		})
	}
	return nodes
}

// createNodes creates the nodes, keeping any that already exist.
func createNodes(ctx context.Context, cs kubernetes.Interface, nodes []*corev1.Node) error {
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	return nil
}

// nodesSchedulable returns nil once every node is Ready and free of the
// not-ready taint, so that pods can land on them.
func nodesSchedulable(ctx context.Context, cs kubernetes.Interface, want int) error {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var waiting []string
	for _, n := range list.Items {
		if !nodeReady(&n) {
			waiting = append(waiting, n.Name+" not Ready")
			continue
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				waiting = append(waiting, n.Name+" tainted "+t.Key)
			}
		}
	}
	if len(list.Items) < want {
		return fmt.Errorf("%d of %d nodes registered", len(list.Items), want)
	}
	if len(waiting) > 0 {
		return fmt.Errorf("%s", strings.Join(waiting, ", "))
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// defaultServiceAccount returns nil once the default namespace has its
// default ServiceAccount: until then the apiserver refuses pods there.
func defaultServiceAccount(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	return err
}
