package gateway

import (
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// hostProxy forwards a request to the host apiserver as the user the
// gateway authenticated: the gateway's own credentials plus impersonation
// headers, so that the host authorizes, admits and answers exactly as if
// the user had come directly.
type hostProxy struct {
	host    *url.URL
	handler *proxy.UpgradeAwareHandler
}

// newHostProxy builds the proxy from the gateway's host client
// configuration, which must be allowed to impersonate.
func newHostProxy(cfg *rest.Config) (*hostProxy, error) {
	host, h, err := newUpgradeAwareProxy(cfg, "the host apiserver", impersonating)
	if err != nil {
		return nil, err
	}
	return &hostProxy{host: host, handler: h}, nil
}

// newUpgradeAwareProxy builds a streaming, upgrade-aware proxy to the
// apiserver of cfg with cfg's credentials; wrap (if not nil) wraps both
// the plain and the upgrade transports (impersonation).
func newUpgradeAwareProxy(cfg *rest.Config, what string, wrap func(http.RoundTripper) http.RoundTripper) (*url.URL, *proxy.UpgradeAwareHandler, error) {
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
	// Upgraded connections (exec, port-forward, attach) are dialled
	// afresh with the apiserver's TLS (and client certificate), their
	// request headers set by the same credentials.
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
	conn := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsCfg})
	// The handler's own location only names the apiserver: the request's
	// path is used as it is (UseRequestLocation). Its path is "/" so that
	// the handler does not answer a 301 to requests it thinks are for the
	// root (it would for every request with an empty location path).
	loc := *host
	loc.Path = "/"
	h := proxy.NewUpgradeAwareHandler(&loc, wrap(rt), false, false, errorResponder{what: what})
	h.UseRequestLocation = true
	h.UseLocationHost = true
	h.UpgradeTransport = proxy.NewUpgradeRequestRoundTripper(conn, wrap(headers))
	return host, h, nil
}

// ServeHTTP forwards r to the host.
func (p *hostProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := request.UserFrom(r.Context()); !ok {
		responsewriters.InternalError(w, r, fmt.Errorf("no user on an authenticated request"))
		return
	}
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host = p.host.Scheme, p.host.Host
	out.Host = p.host.Host
	// Credentials and identity are the gateway's to set: the filters
	// removed the client's Authorization and Impersonate-* headers, and
	// anything else that claims an identity is dropped here too.
	out.Header.Del("Authorization")
	p.handler.ServeHTTP(w, out)
}

// impersonating wraps rt so that each request carries the impersonation
// headers of the user in its context.
func impersonating(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		u, ok := request.UserFrom(r.Context())
		if !ok {
			return nil, fmt.Errorf("no user to impersonate")
		}
		return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
			UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra(),
		}, rt).RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// errorResponder answers a request the apiserver behind could not be
// reached for with 503 and a Status, as an apiserver whose backend is
// down does.
type errorResponder struct{ what string }

func (e errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Forwarding failed", "to", e.what, "path", r.URL.Path)
	responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable(e.what+" did not answer: "+err.Error()),
		codecs, schema.GroupVersion{Version: "v1"}, w, r)
}
