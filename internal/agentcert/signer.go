package agentcert

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/keyutil"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Backdate is how far before the signing time a certificate's validity
// starts, so that an agent whose clock is a little behind the hub's can
// use it at once. Agents add it back to NotBefore to learn when the hub
// signed.
const Backdate = 5 * time.Minute

// DefaultLifetime is the lifetime of an agent certificate unless the
// request or the signer asks for less.
const DefaultLifetime = 24 * time.Hour

// Signer signs agent certificates with a CA the hub's apiserver trusts
// for client certificates (in its --client-ca-file bundle).
type Signer struct {
	cert *x509.Certificate
	key  crypto.Signer
	// MaxLifetime caps the lifetime of the certificates it signs
	// (DefaultLifetime when zero).
	MaxLifetime time.Duration
}

// LoadSigner reads a PEM CA certificate and its private key.
func LoadSigner(certFile, keyFile string) (*Signer, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read the agent signing certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read the agent signing key: %w", err)
	}
	return NewSigner(certPEM, keyPEM)
}

// NewSigner builds a signer from a PEM CA certificate and key.
func NewSigner(certPEM, keyPEM []byte) (*Signer, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the agent signing certificate is not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse the agent signing certificate: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("the agent signing certificate is not a CA allowed to sign certificates")
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse the agent signing key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the agent signing key (%T) cannot sign", k)
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("the agent signing key is not the key of the agent signing certificate")
	}
	return &Signer{cert: cert, key: key}, nil
}

// Lifetime is the lifetime of a certificate for a request asking for
// requested (zero: no preference): the smaller of it and MaxLifetime.
func (s *Signer) Lifetime(requested time.Duration) time.Duration {
	max := s.MaxLifetime
	if max <= 0 {
		max = DefaultLifetime
	}
	if requested > 0 && requested < max {
		return requested
	}
	return max
}

// Sign issues a client certificate for req's key and subject, with the
// member's UID group (MemberGroup) added to its organizations, valid from
// Backdate before now for Backdate plus the lifetime (never past the CA's
// own expiry), and returns it PEM-encoded. A CA that expires before half
// the lifetime signs nothing: its certificates would shrink towards zero
// and agents renew in a loop. req must have passed Check.
func (s *Signer) Sign(req *x509.CertificateRequest, member types.UID, lifetime time.Duration, now time.Time) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(s.cert.NotAfter) {
		notAfter = s.cert.NotAfter
	}
	if left := notAfter.Sub(now); left < lifetime/2 {
		return nil, fmt.Errorf("the agent signing certificate expires at %s, leaving %s: renew the agent CA (--agent-signing-cert-file, --agent-signing-key-file)",
			s.cert.NotAfter.UTC().Format(time.RFC3339), max(left, 0).Round(time.Second))
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subjectOf(req, member),
		NotBefore:    now.Add(-Backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, req.PublicKey, s.key)
	if err != nil {
		return nil, fmt.Errorf("sign the certificate of %s: %w", req.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// IssuedAt is when the hub signed cert, by the hub's clock.
func IssuedAt(cert *x509.Certificate) time.Time { return cert.NotBefore.Add(Backdate) }

// RenewAfter is how long after receiving cert an agent asks for the next
// one: 80% of the validity left when it was signed. Measured from receipt
// on the agent's own clock, it does not depend on how far that clock is
// from the hub's.
func RenewAfter(cert *x509.Certificate) time.Duration {
	return cert.NotAfter.Sub(IssuedAt(cert)) * 4 / 5
}

// Skew is how far the agent's clock (now, when it received cert) is ahead
// of the hub's when cert was signed (negative: behind).
func Skew(cert *x509.Certificate, now time.Time) time.Duration { return now.Sub(IssuedAt(cert)) }

// MaxSkew is the clock difference beyond which an agent warns: the hub
// judges certificates by its own clock, so an agent whose clock is far
// off renews at the wrong time after a restart.
const MaxSkew = 2 * time.Minute

// MemberGroup is the group an agent certificate signed for the
// MemberCluster with the given UID carries besides v1alpha1.AgentGroup.
func MemberGroup(member types.UID) string { return v1alpha1.AgentMemberGroupPrefix + string(member) }

// subjectOf is req's subject with the member's UID group added.
func subjectOf(req *x509.CertificateRequest, member types.UID) pkix.Name {
	subject := req.Subject
	subject.Organization = append(slices.Clone(subject.Organization), MemberGroup(member))
	return subject
}
