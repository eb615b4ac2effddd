package testenv_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2}, &env))
}

func TestMembersRunDeployments(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	for _, m := range env.Members {
		t.Run(m.Name, func(t *testing.T) {
			d := testenv.MakeDeployment("web", ns).Replicas(3).Obj()
			if _, err := m.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create deployment: %v", err)
			}
			testenv.Eventually(t, time.Minute, "deployment web ready in "+m.Name, func(ctx context.Context) error {
				return testenv.DeploymentReady(ctx, m.Client, ns, "web")
			})
			pods, err := m.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatalf("list pods: %v", err)
			}
			for _, p := range pods.Items {
				if p.Status.Phase != "Running" || p.Spec.NodeName == "" {
					t.Errorf("pod %s: phase %s on node %q, want Running on a kwok node", p.Name, p.Status.Phase, p.Spec.NodeName)
				}
			}
		})
	}
}

func TestPodThatFitsNoNodeIsUnschedulable(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	m := env.Members[0]
	// Nodes have 4 cpu each; 5 fits none of them.
	d := testenv.MakeDeployment("big", ns).Replicas(2).CPU("5").Obj()
	if _, err := m.Client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	testenv.Eventually(t, time.Minute, "pods of big unschedulable", func(ctx context.Context) error {
		return testenv.PodsUnschedulable(ctx, m.Client, ns, "app=big", 2)
	})
}

func TestHostDoesNotRunWorkloads(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	d := testenv.MakeDeployment("template", ns).Replicas(2).Obj()
	if _, err := env.Host.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment in host: %v", err)
	}
	// A member Deployment created after the host one is ready before anything
	// could have acted on the host one, so the host's emptiness is meaningful.
	m := env.Members[0]
	if _, err := m.Client.AppsV1().Deployments(ns).Create(ctx, testenv.MakeDeployment("probe", ns).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment in member: %v", err)
	}
	testenv.Eventually(t, time.Minute, "probe deployment ready", func(ctx context.Context) error {
		return testenv.DeploymentReady(ctx, m.Client, ns, "probe")
	})
	rs, err := env.Host.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := env.Host.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Items) != 0 || len(pods.Items) != 0 {
		t.Errorf("host made %d ReplicaSets and %d Pods from a template Deployment, want none", len(rs.Items), len(pods.Items))
	}
}

func TestClustersReportPinnedVersionAndTopology(t *testing.T) {
	testenv.Need(t, env)
	for _, c := range append([]*testenv.Cluster{env.Host}, env.Members...) {
		v, err := c.Client.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("%s: server version: %v", c.Name, err)
		}
		if v.GitVersion != "v1.36.3" {
			t.Errorf("%s reports %s, want v1.36.3", c.Name, v.GitVersion)
		}
	}
	for i, m := range env.Members {
		region, zone := localenv.MemberTopology(i + 1)
		nodes, err := m.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{
			LabelSelector: fmt.Sprintf("%s=%s,%s=%s", localenv.LabelRegion, region, localenv.LabelZone, zone),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 2 {
			t.Errorf("%s: %d nodes labelled %s/%s, want 2", m.Name, len(nodes.Items), region, zone)
		}
	}
}
