package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// agentTunnel returns the tunnel client of a pull member's agent that
// presents cfg's credentials to the gateway gw and serves its requests
// with member (the agent's member credentials).
func agentTunnel(t *testing.T, gw *rest.Config, cluster string, cfg *rest.Config, member *rest.Config) *tunnel.Client {
	t.Helper()
	u, err := url.Parse(gw.Host)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{Host: gw.Host, TLSClientConfig: gw.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		t.Fatal(err)
	}
	h, err := tunnel.MemberHandler(cluster, member, []string{"kube-system"})
	if err != nil {
		t.Fatal(err)
	}
	return &tunnel.Client{Gateway: u, Cluster: cluster, TLS: tlsCfg, Handler: h, MaxBackoff: 500 * time.Millisecond,
		Wrap: func(rt http.RoundTripper) http.RoundTripper {
			w, err := transport.HTTPWrappersForConfig(tc, rt)
			if err != nil {
				t.Error(err)
			}
			return w
		}}
}

// TestPullMemberThroughItsAgentsTunnel: a pull member's pods are listed,
// read by name and deleted through the tunnel its agent opens with the
// credential `flotilla join --mode pull` gives it; the agent of one
// member cannot open another's tunnel, a push member has none, and when
// the tunnel closes the member is named in a warning.
func TestPullMemberThroughItsAgentsTunnel(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	creds, err := join.JoinPull(ctx, join.PullOptions{Name: "gamma", Host: env.Host.Config, TokenDuration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := hostClient(t)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "gamma"}})
	})
	if err := setReady(ctx, "gamma", true, "AgentHeartbeat", ""); err != nil {
		t.Fatal(err)
	}
	agentCfg, err := clientcmd.RESTConfigFromKubeConfig(creds.Agent)
	if err != nil {
		t.Fatal(err)
	}
	// gamma is beta's apiserver, reached with the agent's own member
	// credentials (here the member's admin).
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[1].Client, ns, "tunnelled", nil)
	admin, warned := adminWithWarnings(t, gw)

	agentCtx, stopAgent := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agentTunnel(t, gw, "gamma", agentCfg, env.Members[1].Config).Run(agentCtx) }()
	t.Cleanup(func() {
		stopAgent()
		<-done
	})
	testenv.Eventually(t, 30*time.Second, "gamma's pod read through its agent's tunnel", func(ctx context.Context) error {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "tunnelled@gamma", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Labels[v1alpha1.LabelCluster] != "gamma" {
			return fmt.Errorf("labels %v", p.Labels)
		}
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if got := strings.Join(podNames(l.Items), " "); got != "beta/tunnelled gamma/tunnelled" {
			return fmt.Errorf("pods %s", got)
		}
		if w := strings.Join(warned.take(), "\n"); strings.Contains(w, "gamma") {
			return fmt.Errorf("warnings %q", w)
		}
		return nil
	})

	// Deleting gamma's pod goes through the tunnel to the member.
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "tunnelled@gamma", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the pod deleted in the member", func(ctx context.Context) error {
		_, err := env.Members[1].Client.CoreV1().Pods(ns).Get(ctx, "tunnelled", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})

	// gamma's agent may not open alpha's tunnel (the host's RBAC), and
	// alpha, a push member, has none to open.
	_, err = agentTunnel(t, gw, "alpha", agentCfg, env.Members[0].Config).Open(ctx)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), `cannot create resource "memberclusters/tunnel"`) {
		t.Errorf("gamma's agent opening alpha's tunnel: %v, want 403", err)
	}
	_, err = agentTunnel(t, gw, "alpha", env.Host.Config, env.Members[0].Config).Open(ctx)
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "push member") {
		t.Errorf("opening a push member's tunnel: %v, want 409", err)
	}
	// Not even an admin whose RBAC allows everything may take gamma's
	// tunnel over: it carries users' logs and exec streams.
	_, err = agentTunnel(t, gw, "gamma", env.Host.Config, env.Members[1].Config).Open(ctx)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "only the agent of member gamma") {
		t.Errorf("an admin opening gamma's tunnel: %v, want 403", err)
	}
	// Nor by impersonating the agent (which a namespace editor may do for
	// the agent's ServiceAccount).
	asAgent := rest.CopyConfig(env.Host.Config)
	asAgent.Impersonate = rest.ImpersonationConfig{UserName: rbac.AgentUser("gamma")}
	_, err = agentTunnel(t, gw, "gamma", asAgent, env.Members[1].Config).Open(ctx)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "may not be opened by impersonation") {
		t.Errorf("an admin impersonating gamma's agent to open its tunnel: %v, want 403", err)
	}

	// Without its agent, gamma is named in a warning.
	stopAgent()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("agent tunnel: %v", err)
	}
	done <- nil
	testenv.Eventually(t, 30*time.Second, "gamma named in a warning once its tunnel closed", func(ctx context.Context) error {
		if _, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if w := strings.Join(warned.take(), "\n"); !strings.Contains(w, "member gamma's agent has no tunnel open to the gateway: its pods are as last seen") {
			return fmt.Errorf("warnings %q", w)
		}
		return nil
	})
}
