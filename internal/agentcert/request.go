package agentcert

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Usages are the key usages an agent asks for and the only ones the hub
// signs: a client certificate with an ECDSA or Ed25519 key.
var Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// allowedUsages adds key encipherment, which RSA client keys ask for.
var allowedUsages = append(slices.Clone(Usages), certificatesv1.UsageKeyEncipherment)

// Subject is the subject of cluster's agent certificate: the hub
// authenticates it as user v1alpha1.AgentUserPrefix+cluster in group
// v1alpha1.AgentGroup.
func Subject(cluster string) pkix.Name {
	return pkix.Name{CommonName: v1alpha1.AgentUserPrefix + cluster, Organization: []string{v1alpha1.AgentGroup}}
}

// BootstrapUser is the user name of cluster's bootstrap credential (its
// ServiceAccount in the cluster's hub namespace).
func BootstrapUser(cluster string) string {
	return "system:serviceaccount:" + v1alpha1.ClusterNamespace(cluster) + ":" + v1alpha1.AgentBootstrapServiceAccount
}

// ClusterOf returns the member cluster a CertificateSigningRequest for
// the agent signer asks a certificate for (from its subject's common
// name), or false when it is not such a request or cannot be parsed.
func ClusterOf(csr *certificatesv1.CertificateSigningRequest) (string, bool) {
	if csr.Spec.SignerName != v1alpha1.SignerAgent {
		return "", false
	}
	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return "", false
	}
	name, ok := strings.CutPrefix(req.Subject.CommonName, v1alpha1.AgentUserPrefix)
	return name, ok && name != ""
}

// ParseRequest parses a PEM-encoded PKCS#10 certificate request and checks
// its signature.
func ParseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM block of type CERTIFICATE REQUEST")
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New("spec.request holds more than one PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse the certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the certificate request's signature does not verify: %w", err)
	}
	return req, nil
}

// Check returns the cluster an agent signer request is for, or why the
// hub must deny it: the subject must be exactly Subject(cluster) for a
// valid cluster name, with no other name (DNS, IP, email, URI) and no
// extension beyond those; the usages must be a client certificate's; the
// key must be ECDSA (P-256 or P-384), Ed25519 or RSA of at least 2048
// bits; and the requester must be the cluster's bootstrap ServiceAccount
// or its agent (renewing).
func Check(csr *certificatesv1.CertificateSigningRequest) (string, *x509.CertificateRequest, error) {
	if csr.Spec.SignerName != v1alpha1.SignerAgent {
		return "", nil, fmt.Errorf("signer %q is not %s", csr.Spec.SignerName, v1alpha1.SignerAgent)
	}
	req, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return "", nil, err
	}
	cluster, ok := strings.CutPrefix(req.Subject.CommonName, v1alpha1.AgentUserPrefix)
	if !ok || cluster == "" {
		return "", nil, fmt.Errorf("the subject's common name %q does not start with %s followed by a cluster name", req.Subject.CommonName, v1alpha1.AgentUserPrefix)
	}
	if errs := validation.IsDNS1123Subdomain(cluster); len(errs) > 0 {
		return "", nil, fmt.Errorf("cluster name %q in the common name: %s", cluster, strings.Join(errs, "; "))
	}
	if want := Subject(cluster); req.Subject.String() != want.String() {
		return "", nil, fmt.Errorf("the subject must be exactly %q, got %q", want.String(), req.Subject.String())
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return "", nil, errors.New("an agent certificate carries no DNS, IP, email or URI names")
	}
	if err := checkKey(req); err != nil {
		return "", nil, err
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return "", nil, errors.New(`the usages must include "client auth"`)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return "", nil, fmt.Errorf("usage %q is not allowed for an agent certificate (allowed: %v)", u, allowedUsages)
		}
	}
	if u := csr.Spec.Username; u != BootstrapUser(cluster) && u != v1alpha1.AgentUserPrefix+cluster {
		return "", nil, fmt.Errorf("requested by %q: only %s (bootstrap) or %s%s (renewal) may ask for cluster %s's agent certificate",
			u, BootstrapUser(cluster), v1alpha1.AgentUserPrefix, cluster, cluster)
	}
	return cluster, req, nil
}

// checkKey refuses weak or unknown public keys.
func checkKey(req *x509.CertificateRequest) error {
	switch k := req.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if n := k.Curve.Params().Name; n != "P-256" && n != "P-384" {
			return fmt.Errorf("ECDSA curve %s is not allowed (P-256 or P-384)", n)
		}
	case ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("an RSA key of %d bits is too short (at least 2048)", k.N.BitLen())
		}
	default:
		return fmt.Errorf("public key type %T is not allowed", req.PublicKey)
	}
	return nil
}

// ReasonEarlierMember is the reason with which the hub denies a
// StaleRenewal; an agent told so asks with its bootstrap credential next.
const ReasonEarlierMember = "EarlierMemberCluster"

// Member is what the signer knows of the MemberCluster a request names.
type Member struct {
	// Name is the cluster's name.
	Name string
	// UID is the MemberCluster's UID.
	UID types.UID
	// Recent says it was created less than the longest certificate
	// lifetime ago: a certificate of an earlier MemberCluster of the name
	// may still be valid.
	Recent bool
}

// StaleRenewal reports whether a request from m's agent (a renewal) was
// made with a certificate signed for another MemberCluster of the same
// name: one removed and joined again, whose old agent may still run. A
// certificate from before member groups (none in groups) cannot say whose
// it is: it is renewed, into one with the group, unless m is Recent.
func StaleRenewal(m Member, username string, groups []string) bool {
	if username != v1alpha1.AgentUserPrefix+m.Name {
		return false
	}
	for _, g := range groups {
		if uid, ok := strings.CutPrefix(g, v1alpha1.AgentMemberGroupPrefix); ok {
			return uid != string(m.UID)
		}
	}
	return m.Recent
}
