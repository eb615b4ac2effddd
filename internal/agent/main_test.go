package agent_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/controller/agentsigner"
	"github.com/flotilla-io/flotilla/internal/controller/autoscale"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/controller/status"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/localenv"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/testenv/controlplane"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 1, NodesPerMember: 1}, &env))
}

// pullName is the pull MemberCluster every test uses; its agent runs
// against the environment's member-1.
const pullName = "pull-1"

const waitTimeout = 90 * time.Second

// certLifetime is the lifetime of the agent certificates the test
// controller-manager signs: agents renew them after 80%, 32 s.
const certLifetime = 40 * time.Second

var (
	startOnce sync.Once
	started   bool
	admin     client.Client
	agentHub  *rest.Config // the agent's hub credential, from join
	agentMu   sync.Mutex
	agentStop func() // stops the running agent and waits for it
)

// fastSession is the member timing of the tests: a silent agent counts as
// unreachable 2 s after its heartbeat goes stale.
var fastSession = controlplane.FastMembers()

// startControlPlane runs the controllers in-process as the
// controller-manager's identity, registers the pull member, starts its
// agent and waits until the member is Ready, once per package.
func startControlPlane(t *testing.T) client.Client {
	t.Helper()
	testenv.Need(t, env)
	startOnce.Do(func() {
		ctx := context.Background()
		opts := controlplane.Options(agentsigner.Name, cluster.Name, federate.Name, schedule.Name, propagate.Name, status.Name, autoscale.Name)
		// The agent signer with the environment's agent CA, and
		// certificates short enough for a test to see one renewed.
		opts.AgentSigningCertFile, opts.AgentSigningKeyFile = localenv.AgentSignerFiles(env.StateDir)
		opts.AgentCertificateLifetime = certLifetime
		controlplane.Start(t, env, opts)
		admin = newClient(t)
		// Registered as `flotilla join --mode pull --agent-kubeconfig`
		// does: the agent runs with the token it writes.
		creds, err := join.JoinPull(ctx, join.PullOptions{Name: pullName, Host: env.Host.Config, Labels: map[string]string{"mode": "pull"}, TokenDuration: time.Hour})
		if err != nil {
			t.Fatalf("join %s: %v", pullName, err)
		}
		if agentHub, err = clientcmd.RESTConfigFromKubeConfig(creds.Agent); err != nil {
			t.Fatalf("the agent's kubeconfig: %v", err)
		}
		startAgent(t)
		waitReady(t, metav1.ConditionTrue)
		started = true
	})
	if !started {
		t.Fatal("control plane failed to start in an earlier test")
	}
	return admin
}

// startAgent runs the pull member's agent in-process until stopAgent.
func startAgent(t *testing.T) {
	t.Helper()
	agentMu.Lock()
	defer agentMu.Unlock()
	o := agent.DefaultOptions()
	// The agent acts on the hub with the token join gave it, with only
	// the access join granted.
	o.Cluster, o.Hub, o.Member = pullName, rest.CopyConfig(agentHub), env.Cluster("member-1").Config
	o.LeaderElect, o.ProbeAddr, o.MetricsAddr = false, "0", "0"
	o.Identity, o.Session, o.Heartbeat = "test-agent", fastSession, 500*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := agent.Run(ctx, o); err != nil {
			fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		}
	}()
	agentStop = func() {
		cancel()
		<-done
	}
}

// stopAgent stops the agent and waits until it has.
func stopAgent() {
	agentMu.Lock()
	defer agentMu.Unlock()
	if agentStop != nil {
		agentStop()
		agentStop = nil
	}
}

// waitReady waits until the pull member's Ready condition has status want.
func waitReady(t *testing.T, want metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("MemberCluster %s Ready=%s", pullName, want), func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := admin.Get(ctx, types.NamespacedName{Name: pullName}, mc); err != nil {
			return err
		}
		got = meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
		if got == nil || got.Status != want {
			return fmt.Errorf("Ready: %+v", got)
		}
		return nil
	})
	return got
}

// agentConfig reaches the hub as the pull member's agent user (the
// subject of its future client certificate).
func agentConfig() *rest.Config {
	cfg := rest.CopyConfig(env.Host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: rbac.AgentUser(pullName)}
	return cfg
}

func newClient(t *testing.T) client.Client {
	return newClientFor(t, env.Host.Config)
}

func newClientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createClusterPolicy creates a ClusterPropagationPolicy as the admin and
// deletes it when the test ends.
func createClusterPolicy(t *testing.T, name string, spec v1alpha1.PropagationSpec) {
	t.Helper()
	p := &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := admin.Create(context.Background(), p); err != nil {
		t.Fatalf("create ClusterPropagationPolicy %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin.Delete(context.Background(), p); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete ClusterPropagationPolicy %s: %v", name, err)
		}
	})
}
