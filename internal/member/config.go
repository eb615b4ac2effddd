package member

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Keys of a member credentials Secret.
const (
	// KeyToken holds a bearer token.
	KeyToken = "token"
	// KeyCACert holds the PEM CA bundle that signs the member's serving
	// certificate.
	KeyCACert = corev1.ServiceAccountRootCAKey // "ca.crt"
	// KeyClientCert and KeyClientKey hold a PEM client certificate and key.
	KeyClientCert = corev1.TLSCertKey       // "tls.crt"
	KeyClientKey  = corev1.TLSPrivateKeyKey // "tls.key"
)

// ErrInvalidCredentials is wrapped by RESTConfig when the Secret cannot be
// used to authenticate.
var ErrInvalidCredentials = errors.New("invalid credentials")

// dialTimeout bounds connecting to a member.
const dialTimeout = 5 * time.Second

// RESTConfig builds the client configuration for a member from its spec and
// credentials Secret.
func RESTConfig(mc *v1alpha1.MemberCluster, secret *corev1.Secret) (*rest.Config, error) {
	cfg, _, err := RESTConfigWithToken(mc, secret)
	return cfg, err
}

// RESTConfigWithToken is RESTConfig that also returns the Token its
// clients send (nil for a client certificate), so that a renewed token can
// be swapped in without a new client.
func RESTConfigWithToken(mc *v1alpha1.MemberCluster, secret *corev1.Secret) (*rest.Config, *Token, error) {
	u, err := url.Parse(mc.Spec.APIEndpoint)
	if err != nil || u.Host == "" {
		return nil, nil, fmt.Errorf("apiEndpoint %q is not a URL", mc.Spec.APIEndpoint)
	}
	cfg := &rest.Config{
		Host:      mc.Spec.APIEndpoint,
		UserAgent: "flotilla-controller-manager/" + mc.Name,
		// An own dialer keeps client-go from sharing the transport between
		// members (the session wraps it to close its connections on Stop).
		Dial: (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
	}
	cfg.TLSClientConfig.CAData = secret.Data[KeyCACert]
	if tls := mc.Spec.TLS; tls != nil {
		cfg.TLSClientConfig.Insecure = tls.InsecureSkipVerify
		cfg.TLSClientConfig.ServerName = tls.ServerName
		if tls.InsecureSkipVerify {
			cfg.TLSClientConfig.CAData = nil
		}
	}
	var tok *Token
	token, cert, key := secret.Data[KeyToken], secret.Data[KeyClientCert], secret.Data[KeyClientKey]
	switch {
	case len(token) > 0:
		tok = NewToken(string(token))
		cfg.WrapTransport = tok.WrapTransport
	case len(cert) > 0 && len(key) > 0:
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = cert, key
	default:
		return nil, nil, fmt.Errorf("%w: Secret %s/%s has neither %q nor %q and %q", ErrInvalidCredentials, secret.Namespace, secret.Name, KeyToken, KeyClientCert, KeyClientKey)
	}
	if _, err := rest.TransportFor(cfg); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidCredentials, err)
	}
	return cfg, tok, nil
}

// ConfigHash identifies what a session was built from, so that a change of
// endpoint, TLS options or credentials replaces the session. The bearer
// token is left out: a session takes a new token in place (Token.Set), so
// that renewing it restarts nothing.
func ConfigHash(mc *v1alpha1.MemberCluster, secret *corev1.Secret) string {
	h := sha256.New()
	tls := v1alpha1.TLSOptions{}
	if mc.Spec.TLS != nil {
		tls = *mc.Spec.TLS
	}
	fmt.Fprintf(h, "%s\x00%+v\x00", mc.Spec.APIEndpoint, tls)
	if secret != nil {
		keys := make([]string, 0, len(secret.Data))
		for k := range secret.Data {
			if k != KeyToken {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%s\x00%x\x00", k, secret.Data[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
