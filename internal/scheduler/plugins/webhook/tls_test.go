package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// allowAll answers a filter request allowing every cluster.
func allowAll(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		resp := FilterResponse{}
		for _, c := range req.Clusters {
			resp.Results = append(resp.Results, FilterResult{Cluster: c.Name, Allowed: true})
		}
		reply(w, resp)
	}
}

func certPEM(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(allowAll(t))
	defer srv.Close()
	ctx := context.Background()

	p := newPlugin(t, srv, func(s *v1alpha1.SchedulerPluginWebhookSpec) {
		s.TLS = &v1alpha1.WebhookTLS{CABundle: certPEM(srv.Certificate())}
	})
	if _, err := p.FilterAll(ctx, unit(1), members(2)); err != nil {
		t.Errorf("with the CA bundle: %v", err)
	}

	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	p = newPlugin(t, srv, nil)
	if _, err := p.FilterAll(ctx, unit(1), members(2)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA bundle: error = %v, want a certificate error", err)
	}

	p = newPlugin(t, srv, func(s *v1alpha1.SchedulerPluginWebhookSpec) {
		s.TLS = &v1alpha1.WebhookTLS{InsecureSkipVerify: true}
	})
	if _, err := p.FilterAll(ctx, unit(1), members(2)); err != nil {
		t.Errorf("with insecureSkipVerify: %v", err)
	}
}

// clientCertificate makes a self-signed client certificate.
func clientCertificate(t *testing.T) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "flotilla-scheduler"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, cert
}

func TestClientCertificate(t *testing.T) {
	pair, cert := clientCertificate(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	srv := httptest.NewUnstartedServer(allowAll(t))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	spec := v1alpha1.SchedulerPluginWebhookSpec{
		URL:   srv.URL,
		Paths: v1alpha1.WebhookPaths{Filter: "/filter"},
		TLS:   &v1alpha1.WebhookTLS{CABundle: certPEM(srv.Certificate()), ClientCertSecretRef: &v1alpha1.SecretReference{Name: "ext-client"}},
	}

	if _, err := New("ext", spec, nil); err == nil || !strings.Contains(err.Error(), "no client certificate was loaded") {
		t.Errorf("New without the client certificate: error = %v", err)
	}
	p, err := New("ext", spec, &pair)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.FilterAll(context.Background(), unit(1), members(2)); err != nil {
		t.Errorf("with the client certificate: %v", err)
	}

	spec.TLS.ClientCertSecretRef = nil
	p, err = New("ext", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.FilterAll(context.Background(), unit(1), members(2)); err == nil {
		t.Error("the server accepted a client without a certificate")
	}
}

func TestNewRejectsBadSpecs(t *testing.T) {
	ok := v1alpha1.SchedulerPluginWebhookSpec{URL: "https://ext.example:8443", Paths: v1alpha1.WebhookPaths{Score: "/score"}}
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.SchedulerPluginWebhookSpec)
		want string
	}{
		{"relative URL", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.URL = "/score" }, "is not an absolute http(s) URL"},
		{"ftp URL", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.URL = "ftp://ext.example" }, "is not an absolute http(s) URL"},
		{"no path", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.Paths = v1alpha1.WebhookPaths{} }, "set at least one"},
		{"payload version", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.PayloadVersion = "v2" }, `payloadVersion "v2" is not supported`},
		{"failure policy", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.FailurePolicy = "Retry" }, `failurePolicy "Retry" is not Fail or Ignore`},
		{"negative timeout", func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.TimeoutSeconds = -1 }, "negative"},
		{"bad CA bundle", func(s *v1alpha1.SchedulerPluginWebhookSpec) {
			s.TLS = &v1alpha1.WebhookTLS{CABundle: "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"}
		}, "tls.caBundle holds no PEM certificate"},
		{"CA on http", func(s *v1alpha1.SchedulerPluginWebhookSpec) {
			s.URL = "http://ext.example"
			_, ca := clientCertificate(t)
			s.TLS = &v1alpha1.WebhookTLS{CABundle: certPEM(ca)}
		}, "plain http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok
			tc.edit(&spec)
			if _, err := New("ext", spec, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}

	p, err := New("ext", v1alpha1.SchedulerPluginWebhookSpec{URL: "https://ext.example:8443/base/", Paths: ok.Paths, TimeoutSeconds: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.urls[scorePoint] != "https://ext.example:8443/base/score" || p.timeout != 3*time.Second {
		t.Errorf("score URL %q, timeout %v", p.urls[scorePoint], p.timeout)
	}
}
