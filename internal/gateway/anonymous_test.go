package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestWithoutAnonymous: a request only the anonymous fallback accepted is
// unauthenticated, except a health check; authenticated users pass.
func TestWithoutAnonymous(t *testing.T) {
	as := func(name string) authenticator.Request {
		return authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
		})
	}
	for _, tc := range []struct {
		user, path string
		want       bool
	}{
		{user.Anonymous, "/api/v1/namespaces/a/pods", false},
		{user.Anonymous, "/version", false},
		{user.Anonymous, "/healthz", true},
		{user.Anonymous, "/readyz/informer-sync", true},
		{user.Anonymous, "/livez", true},
		{user.Anonymous, "/readyzz", false},
		{"alice", "/api/v1/namespaces/a/pods", true},
	} {
		_, ok, _ := withoutAnonymous(as(tc.user)).AuthenticateRequest(httptest.NewRequest(http.MethodGet, tc.path, nil))
		if ok != tc.want {
			t.Errorf("%s %s: authenticated %v, want %v", tc.user, tc.path, ok, tc.want)
		}
	}
}
