package manager

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// With --metrics-secure the metrics endpoint asks the host who a caller is
// and whether it may read the endpoint.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// secureMetrics returns the metrics server options of --metrics-secure:
// HTTPS (HTTP/1.1 only) with the certificate in certDir (tls.crt,
// tls.key; a self-signed one when absent), and every request
// authenticated and authorized by the host apiserver.
func secureMetrics(addr, certDir string) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		CertDir:        certDir,
		FilterProvider: authFilter,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
			c.MinVersion = tls.VersionTLS12
		}},
	}
}

// authFilter admits a request only when its bearer token authenticates
// (a TokenReview) and its user may use the path with the request's verb
// (a SubjectAccessReview of the non-resource URL, e.g. get /metrics), as
// the apiserver's own /metrics demands. Allowed answers are cached for a
// minute.
func authFilter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	return func(logger logr.Logger, next http.Handler) (http.Handler, error) {
		g := &gate{client: cs, logger: logger, allowed: map[[sha256.Size]byte]time.Time{}}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code, msg := g.check(r); code != http.StatusOK {
				http.Error(w, msg, code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// gate checks requests against the host.
type gate struct {
	client kubernetes.Interface
	logger logr.Logger

	mu      sync.Mutex
	allowed map[[sha256.Size]byte]time.Time // hash of token, verb and path: until when
}

// Cache bounds: how long an allowed answer holds and how many are kept.
const (
	allowedTTL = time.Minute
	maxAllowed = 1024
	reviewWait = 10 * time.Second
)

// check returns http.StatusOK or the status and message to answer with.
func (g *gate) check(r *http.Request) (int, string) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return http.StatusUnauthorized, "Unauthorized: a bearer token is required"
	}
	verb := strings.ToLower(r.Method)
	if r.Method == http.MethodHead {
		verb = "get"
	}
	key := sha256.Sum256([]byte(verb + "\x00" + r.URL.Path + "\x00" + token))
	now := time.Now()
	g.mu.Lock()
	until, hit := g.allowed[key]
	g.mu.Unlock()
	if hit && now.Before(until) {
		return http.StatusOK, ""
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewWait)
	defer cancel()
	tr, err := g.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		g.logger.Error(err, "Authenticating a metrics request")
		return http.StatusInternalServerError, "Internal Server Error: authentication failed"
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized"
	}
	u := tr.Status.User
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: map[string]authorizationv1.ExtraValue{},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: verb},
	}}
	for k, v := range u.Extra {
		sar.Spec.Extra[k] = authorizationv1.ExtraValue(v)
	}
	res, err := g.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		g.logger.Error(err, "Authorizing a metrics request", "user", u.Username)
		return http.StatusInternalServerError, "Internal Server Error: authorization failed"
	}
	if !res.Status.Allowed {
		return http.StatusForbidden, fmt.Sprintf("Forbidden: user %q may not %s %s", u.Username, verb, r.URL.Path)
	}
	g.mu.Lock()
	if len(g.allowed) >= maxAllowed {
		clear(g.allowed)
	}
	g.allowed[key] = now.Add(allowedTTL)
	g.mu.Unlock()
	return http.StatusOK, ""
}
