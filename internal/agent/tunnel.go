package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// gatewayTunnel returns the runnable that keeps the member's tunnel to
// the gateway open (the leader's alone: a member has one tunnel), so
// that the gateway serves the member's pods, logs, exec and
// port-forward without a member credential on the hub. It presents the
// agent's hub identity (its certificate or token) and trusts GatewayCA,
// or the hub's CA without one.
func gatewayTunnel(o Options) (manager.Runnable, error) {
	u, err := url.Parse(o.Gateway)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("gateway URL %q: want https://HOST[:PORT]", o.Gateway)
	}
	tlsCfg, err := hubTLS(o.Hub)
	if err != nil {
		return nil, err
	}
	if len(o.GatewayCA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.GatewayCA) {
			return nil, errors.New("gateway CA: no PEM certificate in it")
		}
		tlsCfg.RootCAs = pool
	}
	tc, err := o.Hub.TransportConfig()
	if err != nil {
		return nil, fmt.Errorf("hub credentials: %w", err)
	}
	// With the hub's bearer token (and its user agent) on the request.
	if _, err := transport.HTTPWrappersForConfig(tc, http.DefaultTransport); err != nil {
		return nil, fmt.Errorf("hub credentials: %w", err)
	}
	wrap := func(rt http.RoundTripper) http.RoundTripper {
		w, _ := transport.HTTPWrappersForConfig(tc, rt)
		return w
	}
	member := o.GatewayMember
	if member == nil {
		member = o.Member
	}
	noStreams := o.GatewayNoStreamsIn
	if noStreams == nil {
		noStreams = defaultNoStreams()
	}
	h, err := tunnel.MemberHandler(o.Cluster, member, noStreams)
	if err != nil {
		return nil, err
	}
	c := &tunnel.Client{Gateway: u, Cluster: o.Cluster, TLS: tlsCfg, Wrap: wrap, Handler: h}
	return manager.RunnableFunc(c.Run), nil
}

// hubTLS is the TLS configuration the agent reaches the hub with: its
// CA, and its client certificate when it has one. With a certificate
// from the hub (certs.go) the hub configuration carries its own
// transport, whose configuration presents the current certificate.
func hubTLS(hub *rest.Config) (*tls.Config, error) {
	var cfg *tls.Config
	if t, ok := hub.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	} else {
		c, err := rest.TLSConfigFor(hub)
		if err != nil {
			return nil, fmt.Errorf("hub TLS configuration: %w", err)
		}
		if c != nil {
			cfg = c.Clone()
		}
	}
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// The gateway has its own name.
	cfg.ServerName = ""
	return cfg, nil
}

// inClusterNamespace is where a pod's ServiceAccount namespace is mounted.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultNoStreams are kube-system and, in the member, the agent's own
// namespace: a shell there would reach the agent's credential.
func defaultNoStreams() []string {
	out := []string{"kube-system"}
	if b, err := os.ReadFile(inClusterNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" && ns != "kube-system" {
			out = append(out, ns)
		}
	}
	return out
}
