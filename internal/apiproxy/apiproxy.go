// Package apiproxy builds the streaming, upgrade-aware reverse proxy to a
// Kubernetes apiserver that both the gateway (to the host and to push
// members) and the pull agent (to its member, for the gateway's tunnel)
// forward requests with: plain requests go through the client-go
// transport of a rest.Config, upgraded ones (exec, attach, port-forward)
// are dialled afresh with the same TLS, dialer and credentials.
package apiproxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// New builds a proxy to the apiserver of cfg that authenticates with
// cfg's credentials; wrap (if not nil) wraps both the plain and the
// upgrade transports (the gateway adds impersonation headers with it).
// Errors reaching the apiserver are answered by responder. It returns the
// apiserver's URL and the handler; requests keep their own path (the
// caller points them at the apiserver with Direct).
func New(cfg *rest.Config, responder proxy.ErrorResponder, wrap func(http.RoundTripper) http.RoundTripper) (*url.URL, *proxy.UpgradeAwareHandler, error) {
	if wrap == nil {
		wrap = func(rt http.RoundTripper) http.RoundTripper { return rt }
	}
	host, err := url.Parse(cfg.Host)
	if err != nil || host.Host == "" {
		return nil, nil, fmt.Errorf("apiserver URL %q: not a URL", cfg.Host)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: %w", err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS configuration: %w", err)
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("transport configuration: %w", err)
	}
	headers, err := transport.HTTPWrappersForConfig(tc, proxy.MirrorRequest)
	if err != nil {
		return nil, nil, fmt.Errorf("request headers: %w", err)
	}
	// Upgraded connections use cfg's dialer too (the gateway reaches a
	// pull member through its agent's tunnel with one).
	conn := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsCfg, DialContext: cfg.Dial})
	// The handler's own location only names the apiserver: the request's
	// path is used as it is (UseRequestLocation). Its path is "/" so that
	// the handler does not answer a 301 to requests it thinks are for the
	// root (it would for every request with an empty location path).
	loc := *host
	loc.Path = "/"
	h := proxy.NewUpgradeAwareHandler(&loc, wrap(rt), false, false, responder)
	h.UseRequestLocation = true
	h.UseLocationHost = true
	h.UpgradeTransport = proxy.NewUpgradeRequestRoundTripper(conn, wrap(headers))
	return host, h, nil
}

// Direct points out, the proxy's copy of an incoming request, at the
// apiserver at host (New's URL): its scheme and host, and its path before
// the request's own, for an apiserver served under a path prefix (as
// cluster managers that front many clusters serve them). Without the
// prefix the request would reach whatever the URL's host serves at the
// root, with the member's credentials.
func Direct(out *http.Request, host *url.URL) {
	out.URL.Scheme, out.URL.Host, out.Host = host.Scheme, host.Host, host.Host
	if prefix := strings.TrimSuffix(host.Path, "/"); prefix != "" {
		if host.RawPath != "" || out.URL.RawPath != "" {
			// Either carries an escaped "/" (%2F) that Path cannot hold.
			out.URL.RawPath = strings.TrimSuffix(host.EscapedPath(), "/") + out.URL.EscapedPath()
		}
		out.URL.Path = prefix + out.URL.Path
	}
}
