package gateway

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// withoutAnonymous wraps the gateway's authenticator so that a request no
// credential authenticated is refused (401) rather than served as
// system:anonymous, except the health checks. k8s.io/apiserver's
// delegating authentication always admits anonymous requests, and the
// host would then see them impersonated: a host that turned anonymous
// access off (or limits it to some paths) would have it back through the
// gateway.
func withoutAnonymous(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(r)
		if ok && resp != nil && resp.User != nil && resp.User.GetName() == user.Anonymous && !healthPath(r.URL.Path) {
			return nil, false, err
		}
		return resp, ok, err
	})
}

// healthPath reports whether path is one of the health checks a process
// supervisor or load balancer asks without credentials.
func healthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
