package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// testCert makes a certificate for cn valid until notAfter, signed by
// parent (self-signed without one), with its key.
func testCert(t *testing.T, cn string, notAfter time.Time, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, IsCA: isCA, BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// TestTunnelExpiry: a tunnel lasts as long as the certificate that
// authenticated its agent, and an hour otherwise, however long a
// certificate the agent merely presented beside a token is valid.
func TestTunnelExpiry(t *testing.T) {
	now := time.Now()
	ca, caKey := testCert(t, "client-ca", now.Add(10*365*24*time.Hour), true, nil, nil)
	clientCA, err := dynamiccertificates.NewStaticCAContent("client-ca", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	if err != nil {
		t.Fatal(err)
	}
	const agent = "flotilla:agent:m1"
	certEnd := now.Add(30 * 24 * time.Hour).Truncate(time.Second)
	signed, _ := testCert(t, agent, certEnd, false, ca, caKey)
	otherName, _ := testCert(t, "someone-else", certEnd, false, ca, caKey)
	junk, _ := testCert(t, agent, now.Add(100*365*24*time.Hour), false, nil, nil)
	u := &user.DefaultInfo{Name: agent}
	byToken := now.Add(tokenTunnelAge)
	for _, tc := range []struct {
		name  string
		certs []*x509.Certificate
		ca    dynamiccertificates.CAContentProvider
		want  time.Time
	}{
		{"token, no certificate", nil, clientCA, byToken},
		{"certificate the client CA signed for the agent", []*x509.Certificate{signed}, clientCA, certEnd},
		{"self-signed certificate beside a token", []*x509.Certificate{junk}, clientCA, byToken},
		{"signed certificate of another name beside a token", []*x509.Certificate{otherName}, clientCA, byToken},
		{"no client CA", []*x509.Certificate{signed}, nil, byToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{}
			if tc.certs != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: tc.certs}
			}
			got, why := tunnelExpiry(r, u, tc.ca, now)
			if !got.Equal(tc.want) || why == "" {
				t.Errorf("expires %s (%q), want %s", got, why, tc.want)
			}
		})
	}
}
