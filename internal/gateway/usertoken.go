package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// The host learns who a request is from in one of two ways.
//
// A request the gateway authenticated by its bearer token, and by nothing
// else, goes to the host with that same token: the host authenticates it
// itself and sees exactly the user it would see if the client had come
// directly, with no impersonation checks on the host (one authorization
// check for the user and for each of its groups, on every request). The
// token goes nowhere but the host, which is what validated it for the
// gateway (TokenReview), and never to a member.
//
// Any other request (a client certificate, a token sent with a
// certificate, a request that asks to impersonate someone, anonymous)
// goes with the gateway's own credentials and impersonation headers for
// the user the gateway's filters settled on.
//
// A forwarded token travels on a connection of its own that carries no
// credentials of the gateway: with the gateway's client certificate on
// the connection, the host would authenticate the certificate and not
// the token.

// userTokenKey is the context key of the token slot of a request.
type userTokenKey struct{}

// tokenSlot holds a request's bearer token from before authentication;
// the token may be forwarded only once the bearer token authenticator
// (and no other) has authenticated the request with it.
type tokenSlot struct {
	token         string
	authenticated atomic.Bool
}

// withUserToken keeps the request's bearer token in its context when the
// token alone may say who the user is, before the authentication filter
// removes the Authorization header; it must wrap the whole filter chain,
// and the chain's authenticator must be wrapped by markBearer.
func withUserToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token, ok := forwardableToken(r); ok {
			r = r.WithContext(context.WithValue(r.Context(), userTokenKey{}, &tokenSlot{token: token}))
		}
		h.ServeHTTP(w, r)
	})
}

// forwardableToken is r's bearer token if it is the only thing that may
// name r's user: no client certificate (the gateway would authenticate
// the certificate's user instead) and no impersonation header (the user
// the filters settle on is then someone else).
func forwardableToken(r *http.Request) (string, bool) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return "", false
	}
	if asksToImpersonate(r) {
		return "", false
	}
	auth := r.Header.Values("Authorization")
	if len(auth) != 1 {
		return "", false
	}
	// The same token the bearer token authenticator reads.
	parts := strings.SplitN(strings.TrimSpace(auth[0]), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// markBearer wraps the gateway's authenticator so that a request's token
// slot is marked when the bearer token authenticator is the one that
// authenticated it: that authenticator, and no other, removes the
// Authorization header when it succeeds.
func markBearer(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		had := r.Header.Get("Authorization") != ""
		resp, ok, err := a.AuthenticateRequest(r)
		if ok && had && r.Header.Get("Authorization") == "" {
			if slot, _ := r.Context().Value(userTokenKey{}).(*tokenSlot); slot != nil {
				slot.authenticated.Store(true)
			}
		}
		return resp, ok, err
	})
}

// userToken is the token withUserToken kept for ctx's request, if the
// bearer token authenticator authenticated the request with it.
func userToken(ctx context.Context) (string, bool) {
	slot, _ := ctx.Value(userTokenKey{}).(*tokenSlot)
	if slot == nil || !slot.authenticated.Load() {
		return "", false
	}
	return slot.token, true
}

// asksToImpersonate reports whether r carries an impersonation header.
func asksToImpersonate(r *http.Request) bool {
	for k := range r.Header {
		if len(k) >= len("Impersonate-") && strings.EqualFold(k[:len("Impersonate-")], "Impersonate-") {
			return true
		}
	}
	return false
}

// impersonatedKey is the context key that marks a request that asked to
// impersonate someone.
type impersonatedKey struct{}

// withImpersonationMark marks, before the filter chain (whose
// impersonation filter replaces the user and removes the headers), a
// request that asks to impersonate someone; it must wrap the whole chain.
func withImpersonationMark(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asksToImpersonate(r) {
			r = r.WithContext(context.WithValue(r.Context(), impersonatedKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

// impersonated reports whether ctx's request asked to impersonate
// someone: the user the filters settled on is then not the one who
// authenticated.
func impersonated(ctx context.Context) bool {
	v, _ := ctx.Value(impersonatedKey{}).(bool)
	return v
}
