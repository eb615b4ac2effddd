package agentcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func requestPEM(t testing.TB, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func ecKey(t testing.TB, c elliptic.Curve) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func csrFor(req []byte, user string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	if usages == nil {
		usages = Usages
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: req, SignerName: v1alpha1.SignerAgent, Usages: usages, Username: user,
	}}
}

func TestCheck(t *testing.T) {
	p256 := ecKey(t, elliptic.P256())
	good := requestPEM(t, p256, &x509.CertificateRequest{Subject: Subject("edge-1")})
	rsaSmall, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	renewal := v1alpha1.AgentUserPrefix + "edge-1"
	tests := []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		wantErr string
	}{
		{"bootstrap asks", csrFor(good, BootstrapUser("edge-1")), ""},
		{"agent renews", csrFor(good, renewal), ""},
		{"another cluster's bootstrap", csrFor(good, BootstrapUser("edge-2")), "only"},
		{"another cluster's agent", csrFor(good, v1alpha1.AgentUserPrefix+"edge-2"), "only"},
		{"other signer", func() *certificatesv1.CertificateSigningRequest {
			c := csrFor(good, renewal)
			c.Spec.SignerName = "kubernetes.io/kube-apiserver-client"
			return c
		}(), "signer"},
		{"not PEM", csrFor([]byte("hello"), renewal), "PEM"},
		{"two PEM blocks", csrFor(append(append([]byte{}, good...), good...), renewal), "more than one"},
		{"wrong common name", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:admin", Organization: []string{v1alpha1.AgentGroup}}}), renewal), "common name"},
		{"extra group", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: pkix.Name{CommonName: v1alpha1.AgentUserPrefix + "edge-1", Organization: []string{v1alpha1.AgentGroup, "system:masters"}}}), renewal), "exactly"},
		{"no group", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: pkix.Name{CommonName: v1alpha1.AgentUserPrefix + "edge-1"}}), renewal), "exactly"},
		{"bad cluster name", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: Subject("Edge_1")}), v1alpha1.AgentUserPrefix+"Edge_1"), "cluster name"},
		{"DNS name", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: Subject("edge-1"), DNSNames: []string{"hub.example.com"}}), renewal), "no DNS"},
		{"IP address", csrFor(requestPEM(t, p256, &x509.CertificateRequest{Subject: Subject("edge-1"), IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}), renewal), "no DNS"},
		{"server usage", csrFor(good, renewal, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), "not allowed"},
		{"no client auth", csrFor(good, renewal, certificatesv1.UsageDigitalSignature), "client auth"},
		{"weak curve", csrFor(requestPEM(t, ecKey(t, elliptic.P224()), &x509.CertificateRequest{Subject: Subject("edge-1")}), renewal), "curve"},
		{"short RSA key", csrFor(requestPEM(t, rsaSmall, &x509.CertificateRequest{Subject: Subject("edge-1")}), renewal), "too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, req, err := Check(tt.csr)
			if tt.wantErr == "" {
				if err != nil || cluster != "edge-1" || req == nil {
					t.Fatalf("Check = %q, %v, %v; want edge-1", cluster, req != nil, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestClusterOf(t *testing.T) {
	good := requestPEM(t, ecKey(t, elliptic.P256()), &x509.CertificateRequest{Subject: Subject("edge-1")})
	if c, ok := ClusterOf(csrFor(good, "")); !ok || c != "edge-1" {
		t.Errorf("ClusterOf = %q, %v; want edge-1", c, ok)
	}
	other := csrFor(good, "")
	other.Spec.SignerName = "kubernetes.io/kubelet-serving"
	if _, ok := ClusterOf(other); ok {
		t.Error("ClusterOf took another signer's request")
	}
	if _, ok := ClusterOf(csrFor([]byte("junk"), "")); ok {
		t.Error("ClusterOf took an unparsable request")
	}
}

// testCA is a CA valid until notAfter, and for ten years before it: the
// tests sign and verify at fixed times, which must not depend on the day
// they run.
func testCA(t *testing.T, notAfter time.Time) *Signer {
	t.Helper()
	key := ecKey(t, elliptic.P256())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent-ca"}, NotBefore: notAfter.AddDate(-10, 0, 0), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSign(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := testCA(t, now.Add(365*24*time.Hour))
	_, req, err := Check(csrFor(requestPEM(t, ecKey(t, elliptic.P256()), &x509.CertificateRequest{Subject: Subject("edge-1")}), BootstrapUser("edge-1")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.Sign(req, "uid-1", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(s.cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate does not verify as a client certificate: %v", err)
	}
	if want := []string{v1alpha1.AgentGroup, v1alpha1.AgentMemberGroupPrefix + "uid-1"}; cert.Subject.CommonName != Subject("edge-1").CommonName ||
		!slices.Equal(cert.Subject.Organization, want) || cert.IsCA {
		t.Errorf("subject %v (organizations %q, want %q) CA %v", cert.Subject, cert.Subject.Organization, want, cert.IsCA)
	}
	if !IssuedAt(cert).Equal(now) || !cert.NotAfter.Equal(now.Add(time.Hour)) {
		t.Errorf("issued %s until %s, want %s until %s", IssuedAt(cert), cert.NotAfter, now, now.Add(time.Hour))
	}
	if got := RenewAfter(cert); got != 48*time.Minute {
		t.Errorf("RenewAfter = %s, want 48m (80%% of the hour)", got)
	}
	if got := Skew(cert, now.Add(3*time.Minute)); got != 3*time.Minute {
		t.Errorf("Skew = %s, want 3m", got)
	}
	// Never past the CA's own expiry.
	short := testCA(t, now.Add(30*time.Minute))
	data, err = short.Sign(req, "uid-1", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode(data)
	if cert, err = x509.ParseCertificate(block.Bytes); err != nil || !cert.NotAfter.Equal(now.Add(30*time.Minute)) {
		t.Errorf("certificate of a CA expiring in 30m ends %v (%v)", cert.NotAfter, err)
	}
	// A CA about to expire, or expired, signs nothing.
	for _, left := range []time.Duration{5 * time.Minute, -time.Hour} {
		if _, err := testCA(t, now.Add(left)).Sign(req, "uid-1", time.Hour, now); err == nil || !strings.Contains(err.Error(), "renew the agent CA") {
			t.Errorf("signing with a CA %s from its expiry: %v, want a refusal that says to renew it", left, err)
		}
	}
}

func TestLifetime(t *testing.T) {
	s := &Signer{MaxLifetime: 2 * time.Hour}
	for _, tt := range []struct{ requested, want time.Duration }{
		{0, 2 * time.Hour}, {time.Hour, time.Hour}, {3 * time.Hour, 2 * time.Hour},
	} {
		if got := s.Lifetime(tt.requested); got != tt.want {
			t.Errorf("Lifetime(%s) = %s, want %s", tt.requested, got, tt.want)
		}
	}
	if got := (&Signer{}).Lifetime(0); got != DefaultLifetime {
		t.Errorf("default lifetime %s, want %s", got, DefaultLifetime)
	}
}

func TestNewSignerRefusesNonCA(t *testing.T) {
	if _, err := NewSigner([]byte("junk"), []byte("junk")); err == nil {
		t.Error("NewSigner took junk")
	}
}

func TestNewSignerRefusesAnotherKey(t *testing.T) {
	ca := testCA(t, time.Now().Add(time.Hour))
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
	other, err := x509.MarshalPKCS8PrivateKey(ecKey(t, elliptic.P256()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSigner(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: other})); err == nil || !strings.Contains(err.Error(), "not the key of") {
		t.Errorf("NewSigner with another key: %v, want a refusal", err)
	}
}

// FuzzCheck: no request, however malformed, panics the signer's checks,
// and whatever passes names a cluster whose subject it carries exactly.
func FuzzCheck(f *testing.F) {
	good := requestPEM(f, ecKey(f, elliptic.P256()), &x509.CertificateRequest{Subject: Subject("edge-1")})
	f.Add(good, BootstrapUser("edge-1"))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), "x")
	f.Fuzz(func(t *testing.T, req []byte, user string) {
		cluster, parsed, err := Check(csrFor(req, user))
		if err != nil {
			return
		}
		if parsed.Subject.String() != Subject(cluster).String() || (user != BootstrapUser(cluster) && user != v1alpha1.AgentUserPrefix+cluster) {
			t.Fatalf("Check passed %q for %q from %q", parsed.Subject, cluster, user)
		}
	})
}

func TestStaleRenewal(t *testing.T) {
	agent := v1alpha1.AgentUserPrefix + "edge-1"
	for _, tt := range []struct {
		name     string
		username string
		groups   []string
		recent   bool
		want     bool
	}{
		{"bootstrap credential", BootstrapUser("edge-1"), []string{"system:serviceaccounts"}, true, false},
		{"certificate of this member", agent, []string{v1alpha1.AgentGroup, MemberGroup("uid-now"), "system:authenticated"}, true, false},
		{"certificate of an earlier member of the name", agent, []string{v1alpha1.AgentGroup, MemberGroup("uid-before"), "system:authenticated"}, false, true},
		{"certificate from before member groups, member joined long ago", agent, []string{v1alpha1.AgentGroup, "system:authenticated"}, false, false},
		{"certificate from before member groups, member joined recently", agent, []string{v1alpha1.AgentGroup, "system:authenticated"}, true, true},
		{"another cluster's agent", v1alpha1.AgentUserPrefix + "edge-2", []string{MemberGroup("uid-before")}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := StaleRenewal(Member{Name: "edge-1", UID: "uid-now", Recent: tt.recent}, tt.username, tt.groups); got != tt.want {
				t.Errorf("StaleRenewal = %v, want %v", got, tt.want)
			}
		})
	}
}
