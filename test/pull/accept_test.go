package pull

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// flotilla runs the CLI against the environment's host and returns its
// output; a failure ends the test.
func flotilla(t *testing.T, args ...string) string {
	t.Helper()
	hostState, _ := env.Cluster(localenv.HostName)
	out, err := command(bin, append(args, "--host-kubeconfig", hostState.Kubeconfig)...).CombinedOutput()
	if err != nil {
		t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// condition returns MemberCluster name's condition typ.
func condition(ctx context.Context, host client.Client, name, typ string) (*metav1.Condition, error) {
	mc := &v1alpha1.MemberCluster{}
	if err := host.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
		return nil, err
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, typ)
	if c == nil {
		return nil, fmt.Errorf("no %s condition yet", typ)
	}
	return c, nil
}

// TestPendingMemberReceivesNothingUntilAccepted joins a third pull member
// as a user would (flotilla join --mode pull --bootstrap-kubeconfig, then
// flotilla agent in the member), places a ConfigMap on it alone, and
// checks that nothing reaches it until `flotilla accept`; then the agent
// switches to its certificate and the ConfigMap arrives. Its agent works
// in member-1's apiserver, in a namespace only this test uses.
func TestPendingMemberReceivesNothingUntilAccepted(t *testing.T) {
	host, members := clients(t)
	ctx := context.Background()
	const name = "edge-pending"
	dir := t.TempDir()
	bootstrap := filepath.Join(dir, "bootstrap.kubeconfig")
	out := flotilla(t, "join", name, "--mode", "pull", "--bootstrap-kubeconfig", bootstrap)
	if !strings.Contains(out, "flotilla accept "+name) {
		t.Errorf("join's output does not say how to accept:\n%s", out)
	}
	t.Cleanup(func() {
		hostState, _ := env.Cluster(localenv.HostName)
		_ = command(bin, "unjoin", name, "--host-kubeconfig", hostState.Kubeconfig).Run()
	})

	memberState, _ := env.Cluster(push)
	log := &syncBuffer{}
	agent := command(bin, "agent", "--cluster", name, "--bootstrap-kubeconfig", bootstrap, "--cert-dir", filepath.Join(dir, "pki"),
		"--kubeconfig", memberState.Kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	agent.Stdout, agent.Stderr = log, log
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		_ = agent.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})

	eventually(t, "the member is pending with the agent's request", func(ctx context.Context) error {
		c, err := condition(ctx, host, name, v1alpha1.ConditionAccepted)
		if err != nil {
			return err
		}
		if c.Reason != v1alpha1.ReasonPendingAcceptance || !strings.Contains(c.Message, "flotilla accept "+name) {
			return fmt.Errorf("Accepted: %s %s", c.Reason, c.Message)
		}
		return nil
	})

	ns := "pending-e2e"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-" + name}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "greeting"}},
			Placement:         v1alpha1.Placement{ClusterNames: []string{name}},
		}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "greeting"}, Data: map[string]string{"hello": "edge"}},
	} {
		if err := host.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = host.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		_ = members[push].CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// The ConfigMap is federated, but placed nowhere: the only cluster it
	// may go to is not accepted, so not Ready.
	eventually(t, "the ConfigMap's FederatedObject exists and places nothing", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "greeting.configmap"}, fo); err != nil {
			return err
		}
		if len(fo.Spec.Placement) != 0 || len(fo.Status.ScheduledClusters) != 0 {
			return fmt.Errorf("placed on %v (scheduled %v)", fo.Spec.Placement, fo.Status.ScheduledClusters)
		}
		if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled); c == nil || c.Status == metav1.ConditionTrue {
			return fmt.Errorf("Scheduled: %+v", c)
		}
		return nil
	})
	intents := &v1alpha1.ClusterIntentList{}
	if err := host.List(ctx, intents, client.InNamespace(v1alpha1.ClusterNamespace(name))); err != nil || len(intents.Items) != 0 {
		t.Errorf("ClusterIntents for the pending member: %d (%v), want none", len(intents.Items), err)
	}
	if _, err := members[push].CoreV1().ConfigMaps(ns).Get(ctx, "greeting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap reached the pending member's apiserver: %v", err)
	}

	out = flotilla(t, "accept", name)
	if !strings.Contains(out, "accepted") {
		t.Errorf("accept's output: %s", out)
	}
	eventually(t, "the accepted member is Ready", func(ctx context.Context) error {
		c, err := condition(ctx, host, name, v1alpha1.ConditionReady)
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready: %s %s %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	eventually(t, "the ConfigMap reaches the member through its agent", func(ctx context.Context) error {
		cm, err := members[push].CoreV1().ConfigMaps(ns).Get(ctx, "greeting", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data["hello"] != "edge" {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})
	if !strings.Contains(log.String(), "Got the agent's certificate") {
		t.Errorf("the agent did not log its certificate")
	}
	// The certificate the agent got is confined to its own cluster.
	pem := filepath.Join(dir, "pki", "flotilla-agent-current.pem")
	hostState, _ := env.Cluster(localenv.HostName)
	hostCfg, err := localenv.RESTConfig(hostState.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	certCfg := &rest.Config{Host: hostCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: hostCfg.CAData, CAFile: hostCfg.CAFile, CertFile: pem, KeyFile: pem}}
	withCert, err := client.New(certCfg, client.Options{Scheme: host.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := withCert.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(name))); err != nil {
		t.Errorf("the agent's certificate lists its own intents: %v", err)
	}
	for what, err := range map[string]error{
		"list another cluster's intents":  withCert.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(pull))),
		"list Secrets":                    withCert.List(ctx, &corev1.SecretList{}),
		"list Secrets in flotilla-system": withCert.List(ctx, &corev1.SecretList{}, client.InNamespace(v1alpha1.SystemNamespace)),
		"list MemberClusters":             withCert.List(ctx, &v1alpha1.MemberClusterList{}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s with the agent's certificate: got %v, want 403 Forbidden", what, err)
		}
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		// What an admin sees: kubectl get mc shows the member accepted.
		got, err := command("kubectl", "--kubeconfig", hostState.Kubeconfig, "get", "mc", name, "-o", "jsonpath={.spec.accepted}").CombinedOutput()
		if err != nil || string(got) != "true" {
			t.Errorf("kubectl get mc %s spec.accepted: %q %v", name, got, err)
		}
	}
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
