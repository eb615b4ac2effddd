package member

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Token is a member's bearer token that may be replaced under a live
// session: the clients built with it send the newest value, so renewing a
// credential restarts no informer.
type Token struct {
	v atomic.Value // string
}

// NewToken holds t.
func NewToken(t string) *Token {
	tok := &Token{}
	tok.v.Store(t)
	return tok
}

// Set replaces the token.
func (t *Token) Set(v string) { t.v.Store(v) }

// Get returns the current token.
func (t *Token) Get() string { return t.v.Load().(string) }

// WrapTransport adds the current token to each request that carries no
// Authorization header (a rest.Config WrapTransport).
func (t *Token) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &tokenTransport{token: t, next: rt}
}

type tokenTransport struct {
	token *Token
	next  http.RoundTripper
}

func (tt *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return tt.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tt.token.Get())
	return tt.next.RoundTrip(req)
}

// WrappedRoundTripper returns the wrapped transport (for client-go's
// connection handling).
func (tt *tokenTransport) WrappedRoundTripper() http.RoundTripper { return tt.next }

// TokenClaims are what a bearer token says about itself, read without
// verifying it (the member verifies it; the controller-manager only needs
// to know when to renew it and for which ServiceAccount).
type TokenClaims struct {
	// Subject is the token's "sub", for a ServiceAccount token
	// system:serviceaccount:NAMESPACE:NAME.
	Subject string
	// IssuedAt and Expiry are "iat" and "exp".
	IssuedAt, Expiry time.Time
}

// ParseTokenClaims reads the claims of a JWT bearer token; ok is false for
// a token that is not a JWT or carries no expiry (a static or legacy
// token, which is never renewed).
func ParseTokenClaims(token string) (TokenClaims, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return TokenClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return TokenClaims{}, false
	}
	var c struct {
		Sub string `json:"sub"`
		Iat *int64 `json:"iat"`
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &c); err != nil || c.Exp == nil || c.Iat == nil || *c.Exp <= *c.Iat {
		return TokenClaims{}, false
	}
	return TokenClaims{Subject: c.Sub, IssuedAt: time.Unix(*c.Iat, 0), Expiry: time.Unix(*c.Exp, 0)}, true
}

// Lifetime is how long the token was issued for.
func (c TokenClaims) Lifetime() time.Duration { return c.Expiry.Sub(c.IssuedAt) }

// RenewAt is when fraction of the token's lifetime has passed.
func (c TokenClaims) RenewAt(fraction float64) time.Time {
	return c.IssuedAt.Add(time.Duration(float64(c.Lifetime()) * fraction))
}

// ServiceAccount returns the namespace and name of a ServiceAccount
// token's subject.
func (c TokenClaims) ServiceAccount() (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(c.Subject, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}
