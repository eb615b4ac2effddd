package member

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

var (
	certOnce         sync.Once
	certPEM, keyPEM  []byte
	errCertGenerated error
)

// testCert returns a self-signed ECDSA certificate and key in PEM, usable
// both as CA bundle and as client certificate.
func testCert(t *testing.T) (cert, key []byte) {
	t.Helper()
	certOnce.Do(func() {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			errCertGenerated = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "flotilla-test"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			errCertGenerated = err
			return
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			errCertGenerated = err
			return
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	})
	if errCertGenerated != nil {
		t.Fatalf("generate test certificate: %v", errCertGenerated)
	}
	return certPEM, keyPEM
}

func memberCluster(endpoint string, tls *v1alpha1.TLSOptions) *v1alpha1.MemberCluster {
	return &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "east"},
		Spec:       v1alpha1.MemberClusterSpec{APIEndpoint: endpoint, TLS: tls, SecretRef: &v1alpha1.SecretReference{Name: "east"}},
	}
}

func secretWith(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "east"}, Data: data}
}

func TestRESTConfig(t *testing.T) {
	cert, key := testCert(t)
	const endpoint = "https://10.0.0.1:6443"
	tests := []struct {
		name    string
		mc      *v1alpha1.MemberCluster
		secret  *corev1.Secret
		wantErr error // nil: no error; errAny: any error
		check   func(t *testing.T, cfg *configView)
	}{
		{
			name:   "token with CA",
			mc:     memberCluster(endpoint, nil),
			secret: secretWith(map[string][]byte{KeyToken: []byte("s3cr3t"), KeyCACert: cert}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "BearerToken", c.BearerToken, "s3cr3t")
				c.wantBytes(t, "CAData", c.CAData, cert)
				c.wantBytes(t, "CertData", c.CertData, nil)
				c.wantBytes(t, "KeyData", c.KeyData, nil)
				c.want(t, "Insecure", c.Insecure, false)
			},
		},
		{
			name:   "token without CA uses the system roots",
			mc:     memberCluster(endpoint, nil),
			secret: secretWith(map[string][]byte{KeyToken: []byte("s3cr3t")}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "BearerToken", c.BearerToken, "s3cr3t")
				c.wantBytes(t, "CAData", c.CAData, nil)
			},
		},
		{
			name:   "client certificate",
			mc:     memberCluster(endpoint, nil),
			secret: secretWith(map[string][]byte{KeyClientCert: cert, KeyClientKey: key, KeyCACert: cert}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "BearerToken", c.BearerToken, "")
				c.wantBytes(t, "CertData", c.CertData, cert)
				c.wantBytes(t, "KeyData", c.KeyData, key)
				c.wantBytes(t, "CAData", c.CAData, cert)
			},
		},
		{
			name:   "token wins over a client certificate",
			mc:     memberCluster(endpoint, nil),
			secret: secretWith(map[string][]byte{KeyToken: []byte("s3cr3t"), KeyClientCert: cert, KeyClientKey: key}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "BearerToken", c.BearerToken, "s3cr3t")
				c.wantBytes(t, "CertData", c.CertData, nil)
			},
		},
		{
			name:   "InsecureSkipVerify drops the CA",
			mc:     memberCluster(endpoint, &v1alpha1.TLSOptions{InsecureSkipVerify: true}),
			secret: secretWith(map[string][]byte{KeyToken: []byte("s3cr3t"), KeyCACert: cert}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "Insecure", c.Insecure, true)
				c.wantBytes(t, "CAData", c.CAData, nil)
			},
		},
		{
			name:   "ServerName is passed on and keeps the CA",
			mc:     memberCluster(endpoint, &v1alpha1.TLSOptions{ServerName: "kubernetes.default"}),
			secret: secretWith(map[string][]byte{KeyToken: []byte("s3cr3t"), KeyCACert: cert}),
			check: func(t *testing.T, c *configView) {
				c.want(t, "ServerName", c.ServerName, "kubernetes.default")
				c.want(t, "Insecure", c.Insecure, false)
				c.wantBytes(t, "CAData", c.CAData, cert)
			},
		},
		{
			name:    "neither token nor client certificate",
			mc:      memberCluster(endpoint, nil),
			secret:  secretWith(map[string][]byte{KeyCACert: cert}),
			wantErr: ErrInvalidCredentials,
		},
		{
			name:    "empty token",
			mc:      memberCluster(endpoint, nil),
			secret:  secretWith(map[string][]byte{KeyToken: {}}),
			wantErr: ErrInvalidCredentials,
		},
		{
			name:    "client certificate without key",
			mc:      memberCluster(endpoint, nil),
			secret:  secretWith(map[string][]byte{KeyClientCert: cert}),
			wantErr: ErrInvalidCredentials,
		},
		{
			name:    "client key that is not PEM",
			mc:      memberCluster(endpoint, nil),
			secret:  secretWith(map[string][]byte{KeyClientCert: cert, KeyClientKey: []byte("not a key")}),
			wantErr: ErrInvalidCredentials,
		},
		{
			name:    "CA that is not PEM",
			mc:      memberCluster(endpoint, nil),
			secret:  secretWith(map[string][]byte{KeyToken: []byte("s3cr3t"), KeyCACert: []byte("not a certificate")}),
			wantErr: ErrInvalidCredentials,
		},
		{
			name:    "endpoint without a host",
			mc:      memberCluster("10.0.0.1:6443", nil),
			secret:  secretWith(map[string][]byte{KeyToken: []byte("s3cr3t")}),
			wantErr: errAny,
		},
		{
			name:    "empty endpoint",
			mc:      memberCluster("", nil),
			secret:  secretWith(map[string][]byte{KeyToken: []byte("s3cr3t")}),
			wantErr: errAny,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, tok, err := RESTConfigWithToken(tt.mc, tt.secret)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("RESTConfig() error = %v, want none", err)
			case tt.wantErr == nil:
			case err == nil:
				t.Fatalf("RESTConfig() = %+v, want an error", cfg)
			case tt.wantErr == errAny:
				if errors.Is(err, ErrInvalidCredentials) {
					t.Fatalf("RESTConfig() error = %v, want one that is not about credentials", err)
				}
				return
			case !errors.Is(err, tt.wantErr):
				t.Fatalf("RESTConfig() error = %v, want it to wrap %v", err, tt.wantErr)
			default:
				if cfg != nil {
					t.Errorf("RESTConfig() returned a config with error %v", err)
				}
				if tt.secret.Data[KeyToken] == nil && tt.secret.Data[KeyClientKey] == nil && !strings.Contains(err.Error(), "flotilla-system/east") {
					t.Errorf("error %q does not name the Secret", err)
				}
				return
			}
			if cfg.Host != tt.mc.Spec.APIEndpoint {
				t.Errorf("Host = %q, want %q", cfg.Host, tt.mc.Spec.APIEndpoint)
			}
			if cfg.Dial == nil {
				t.Errorf("Dial is nil; want an own dialer so that the transport is not shared")
			}
			if !strings.HasSuffix(cfg.UserAgent, "/east") {
				t.Errorf("UserAgent = %q, want it to name the member", cfg.UserAgent)
			}
			if cfg.BearerToken != "" {
				t.Errorf("BearerToken is set: the token must come from the Token, so that it can be renewed in place")
			}
			var bearer string
			if tok != nil {
				bearer = tok.Get()
				if cfg.WrapTransport == nil {
					t.Errorf("a token without the WrapTransport that sends it")
				}
			}
			tt.check(t, &configView{
				BearerToken: bearer, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData,
				Insecure: cfg.Insecure, ServerName: cfg.ServerName,
			})
		})
	}
}

// errAny stands for an error other than ErrInvalidCredentials.
var errAny = errors.New("any error")

// configView is the part of a rest.Config the tests check.
type configView struct {
	BearerToken               string
	CAData, CertData, KeyData []byte
	Insecure                  bool
	ServerName                string
}

func (configView) want(t *testing.T, field string, got, want any) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", field, got, want)
	}
}

func (configView) wantBytes(t *testing.T, field string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s = %q, want %q", field, got, want)
	}
}

func TestConfigHash(t *testing.T) {
	base := func() (*v1alpha1.MemberCluster, *corev1.Secret) {
		return memberCluster("https://10.0.0.1:6443", &v1alpha1.TLSOptions{ServerName: "api"}),
			secretWith(map[string][]byte{KeyToken: []byte("t1"), KeyCACert: []byte("ca"), "other": []byte("x")})
	}
	mc0, s0 := base()
	h0 := ConfigHash(mc0, s0)
	if len(h0) != 16 {
		t.Fatalf("ConfigHash() = %q, want 16 hex digits", h0)
	}

	tests := []struct {
		name       string
		mutate     func(mc *v1alpha1.MemberCluster, s **corev1.Secret)
		wantChange bool
	}{
		{name: "unchanged", mutate: func(*v1alpha1.MemberCluster, **corev1.Secret) {}},
		{
			name: "same data inserted in another order",
			mutate: func(_ *v1alpha1.MemberCluster, s **corev1.Secret) {
				d := map[string][]byte{}
				for _, k := range []string{"other", KeyCACert, KeyToken} {
					d[k] = (*s).Data[k]
				}
				*s = secretWith(d)
			},
		},
		{
			name: "Secret metadata, name and labels do not matter",
			mutate: func(mc *v1alpha1.MemberCluster, s **corev1.Secret) {
				(*s).ResourceVersion, (*s).Labels = "42", map[string]string{"a": "b"}
				mc.Labels, mc.Generation = map[string]string{"region": "eu"}, 7
				mc.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
			},
		},
		{
			name:       "endpoint",
			mutate:     func(mc *v1alpha1.MemberCluster, _ **corev1.Secret) { mc.Spec.APIEndpoint = "https://10.0.0.2:6443" },
			wantChange: true,
		},
		{
			name:       "InsecureSkipVerify",
			mutate:     func(mc *v1alpha1.MemberCluster, _ **corev1.Secret) { mc.Spec.TLS.InsecureSkipVerify = true },
			wantChange: true,
		},
		{
			name:       "ServerName",
			mutate:     func(mc *v1alpha1.MemberCluster, _ **corev1.Secret) { mc.Spec.TLS.ServerName = "api2" },
			wantChange: true,
		},
		{
			name:       "TLS options removed",
			mutate:     func(mc *v1alpha1.MemberCluster, _ **corev1.Secret) { mc.Spec.TLS = nil },
			wantChange: true,
		},
		{
			// A renewed token is taken in place (Token.Set).
			name:       "token",
			mutate:     func(_ *v1alpha1.MemberCluster, s **corev1.Secret) { (*s).Data[KeyToken] = []byte("t2") },
			wantChange: false,
		},
		{
			name:       "CA",
			mutate:     func(_ *v1alpha1.MemberCluster, s **corev1.Secret) { (*s).Data[KeyCACert] = []byte("ca2") },
			wantChange: true,
		},
		{
			name:       "key added",
			mutate:     func(_ *v1alpha1.MemberCluster, s **corev1.Secret) { (*s).Data[KeyClientCert] = []byte("c") },
			wantChange: true,
		},
		{
			name:       "key removed",
			mutate:     func(_ *v1alpha1.MemberCluster, s **corev1.Secret) { delete((*s).Data, "other") },
			wantChange: true,
		},
		{
			name: "value moved to another key",
			mutate: func(_ *v1alpha1.MemberCluster, s **corev1.Secret) {
				(*s).Data["other2"] = (*s).Data["other"]
				delete((*s).Data, "other")
			},
			wantChange: true,
		},
		{
			name:       "no Secret",
			mutate:     func(_ *v1alpha1.MemberCluster, s **corev1.Secret) { *s = nil },
			wantChange: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc, s := base()
			tt.mutate(mc, &s)
			h := ConfigHash(mc, s)
			if changed := h != h0; changed != tt.wantChange {
				t.Errorf("ConfigHash() = %q, base %q: changed = %v, want %v", h, h0, changed, tt.wantChange)
			}
			if again := ConfigHash(mc, s); again != h {
				t.Errorf("ConfigHash() is not stable: %q then %q", h, again)
			}
		})
	}
}

func TestConfigHashNilTLSEqualsEmptyTLS(t *testing.T) {
	s := secretWith(map[string][]byte{KeyToken: []byte("t")})
	a := ConfigHash(memberCluster("https://h:6443", nil), s)
	b := ConfigHash(memberCluster("https://h:6443", &v1alpha1.TLSOptions{}), s)
	if a != b {
		t.Errorf("ConfigHash with nil TLS = %q, with empty TLS = %q; want equal (same connection)", a, b)
	}
}
