package localenv

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func TestAuthorityIssuesLoopbackServingCerts(t *testing.T) {
	ca, err := newAuthority("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.issueServing("member-1")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.certPEM)
	for _, host := range []string{"127.0.0.1", "localhost", "member-1", "kubernetes.default.svc"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool()}); err == nil {
		t.Errorf("certificate verifies without its CA")
	}
}

func TestServiceAccountKeyAndToken(t *testing.T) {
	priv, pub, err := newServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := pem.Decode(priv); b == nil || b.Type != "EC PRIVATE KEY" {
		t.Errorf("private key is not an EC PEM block")
	}
	if b, _ := pem.Decode(pub); b == nil || b.Type != "PUBLIC KEY" {
		t.Errorf("public key is not a PEM public key")
	}
	a, _ := newToken()
	b, _ := newToken()
	if len(a) != 48 || a == b {
		t.Errorf("tokens %q and %q: want 48 random hex characters each", a, b)
	}
}
