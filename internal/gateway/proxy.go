package gateway

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/flotilla-io/flotilla/internal/apiproxy"
	"github.com/flotilla-io/flotilla/internal/inlinehttp"
)

// hostProxy forwards a request to the host apiserver as the user the
// gateway authenticated: the gateway's own credentials plus impersonation
// headers, so that the host authorizes, admits and answers exactly as if
// the user had come directly.
type hostProxy struct {
	host *url.URL
	// whole forwards the requests that the request timeout bounds (get,
	// list, create, apply, ...) over HTTP/1.1, on connections kept for
	// the next request: an HTTP/1.1 exchange costs the gateway and the
	// host less than an HTTP/2 stream, and the in-flight limits bound
	// how many connections these requests need.
	whole *httputil.ReverseProxy
	// stream forwards watches and the other long-running requests that
	// are not upgrades over HTTP/2, many to a connection.
	stream *httputil.ReverseProxy
	// upgrade forwards upgrade requests (exec, attach, port-forward),
	// dialled afresh.
	upgrade *proxy.UpgradeAwareHandler
}

// newHostProxy builds the proxy from the gateway's host client
// configuration, which must be allowed to impersonate. With
// forwardTokens, a request withUserToken kept a token for goes with that
// token instead (usertoken.go); upgrades always impersonate.
func newHostProxy(cfg *rest.Config, forwardTokens bool) (*hostProxy, error) {
	responder := errorResponder{what: "the host apiserver"}
	host, up, err := apiproxy.New(cfg, responder, impersonating)
	if err != nil {
		return nil, err
	}
	http1 := rest.CopyConfig(cfg)
	http1.NextProtos = []string{"http/1.1"}
	whole, err := asUser(http1, forwardTokens, inlinehttp.Wrapper(host.Host))
	if err != nil {
		return nil, fmt.Errorf("HTTP/1.1 transport: %w", err)
	}
	stream, err := asUser(cfg, forwardTokens, nil)
	if err != nil {
		return nil, fmt.Errorf("HTTP/2 transport: %w", err)
	}
	return &hostProxy{
		host:    host,
		whole:   newReverseProxy(host, whole, up.FlushInterval, responder),
		stream:  newReverseProxy(host, stream, up.FlushInterval, responder),
		upgrade: up,
	}, nil
}

// asUser is the transport to the host of cfg that sends a request as its
// user: with the user's own bearer token if withUserToken kept one (and
// forwardTokens), on a transport without the gateway's credentials;
// otherwise with the gateway's credentials and impersonation headers.
// wrap, if not nil, wraps the base transport of both (rest.Config's
// WrapTransport).
func asUser(cfg *rest.Config, forwardTokens bool, wrap transport.WrapperFunc) (http.RoundTripper, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(wrap)
	gw, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	impersonated := impersonating(gw)
	if !forwardTokens {
		return impersonated, nil
	}
	anonymous := rest.AnonymousClientConfig(cfg)
	anonymous.Wrap(wrap)
	bare, err := rest.TransportFor(anonymous)
	if err != nil {
		return nil, err
	}
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		token, ok := userToken(r.Context())
		if !ok {
			return impersonated.RoundTrip(r)
		}
		hostRequests.WithLabelValues("token").Inc()
		out := r.Clone(r.Context())
		out.Header.Set("Authorization", "Bearer "+token)
		return bare.RoundTrip(out)
	}), nil
}

// newReverseProxy forwards a request that is not an upgrade as the
// upgrade-aware handler does (same director, flush interval and error
// responder), but is built once rather than for every request, and reuses
// its copy buffers: the request's own path and query go to the host,
// X-Forwarded-For appended and hop-by-hop headers dropped; the host's
// answer (status, headers, body, trailers) is copied as it is, flushed at
// least every flushInterval (at once when its length is unknown, as a
// watch's).
func newReverseProxy(host *url.URL, rt http.RoundTripper, flushInterval time.Duration, responder errorResponder) *httputil.ReverseProxy {
	// The host's path, if any, goes before the request's (apiproxy.Direct).
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: host.Scheme, Host: host.Host, Path: host.Path, RawPath: host.RawPath})
	toHost := p.Director
	p.Director = func(r *http.Request) {
		toHost(r)
		r.Host = host.Host
		// Credentials and identity are the gateway's to set (its
		// transport adds them after this): the filters removed the
		// client's Authorization and Impersonate-* headers, and anything
		// else that carries credentials or claims an identity (X-Remote-*,
		// a WebSocket bearer subprotocol) is dropped here too (r is the
		// proxy's own copy of the request).
		stripCredentials(r.Header)
	}
	p.Transport = rt
	p.FlushInterval = flushInterval
	p.ErrorHandler = responder.Error
	p.ErrorLog = klog.NewStandardLogger("ERROR")
	p.BufferPool = copyBuffers
	return p
}

// ServeHTTP forwards r to the host.
func (p *hostProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := request.UserFrom(r.Context()); !ok {
		responsewriters.InternalError(w, r, fmt.Errorf("no user on an authenticated request"))
		return
	}
	if httpstream.IsUpgradeRequest(r) {
		out := r.Clone(r.Context())
		apiproxy.Direct(out, p.host)
		stripCredentials(out.Header)
		p.upgrade.ServeHTTP(w, out)
		return
	}
	if info, ok := request.RequestInfoFrom(r.Context()); ok && !longRunning(r, info) {
		p.whole.ServeHTTP(w, r)
		return
	}
	p.stream.ServeHTTP(w, r)
}

// copyBuffers are the reverse proxy's body copy buffers (32 KiB, its own
// default size), reused rather than allocated for every request.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// hostRequests counts the requests forwarded to the host by how the host
// learns their user.
var hostRequests = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "flotilla",
	Subsystem:      "gateway",
	Name:           "host_requests_total",
	Help:           "Requests forwarded to the host apiserver, by how the host learns the user: token (the user's own bearer token) or impersonation (the gateway's credential with impersonation headers).",
	StabilityLevel: metrics.ALPHA,
}, []string{"as"})

func init() { legacyregistry.MustRegister(hostRequests) }

// impersonating wraps rt so that each request carries the impersonation
// headers of the user in its context.
func impersonating(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		u, ok := request.UserFrom(r.Context())
		if !ok {
			return nil, fmt.Errorf("no user to impersonate")
		}
		hostRequests.WithLabelValues("impersonation").Inc()
		return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
			UserName: u.GetName(), UID: u.GetUID(), Groups: impersonatedGroups(u), Extra: u.GetExtra(),
		}, rt).RoundTrip(r)
	})
}

// impersonatedGroups are the groups the gateway asks the host to
// impersonate: the user's, without system:authenticated, which the host
// adds to every impersonated user that is not anonymous (as it does to
// every authenticated one). Each group asked for is one more
// authorization check on the host for every request.
func impersonatedGroups(u user.Info) []string {
	groups := u.GetGroups()
	if _, _, err := serviceaccount.SplitUsername(u.GetName()); err == nil {
		// Without groups, the host would give a ServiceAccount name its
		// ServiceAccount groups: send them as they are.
		return groups
	}
	if u.GetName() == user.Anonymous || slices.Contains(groups, user.AllUnauthenticated) || !slices.Contains(groups, user.AllAuthenticated) {
		return groups
	}
	out := make([]string, 0, len(groups)-1)
	for _, g := range groups {
		if g != user.AllAuthenticated {
			out = append(out, g)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// errorResponder answers a request the apiserver behind could not be
// reached for with 503 and a Status, as an apiserver whose backend is
// down does.
type errorResponder struct{ what string }

func (e errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Forwarding failed", "to", e.what, "path", r.URL.Path)
	responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable(e.what+" did not answer: "+apiproxy.Unreachable(err)+" (the gateway's log has the details)"),
		codecs, schema.GroupVersion{Version: "v1"}, w, r)
}
