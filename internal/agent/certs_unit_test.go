package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/keyutil"

	"github.com/flotilla-io/flotilla/internal/agentcert"
)

// storeWith is a memStore holding a self-signed certificate for cluster's
// agent, valid for an hour.
func storeWith(t *testing.T, cluster string) *memStore {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: agentcert.Subject(cluster),
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{}
	if _, err := store.Update(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM); err != nil {
		t.Fatal(err)
	}
	return store
}

// TestStoredCertificateOfAnotherCluster: a certificate directory reused
// for a member joined under a new name holds the old name's certificate,
// which the agent does not use.
func TestStoredCertificateOfAnotherCluster(t *testing.T) {
	hub := &rest.Config{Host: "https://127.0.0.1:1"}
	if c, _ := newCertSource("edge-1", hub, storeWith(t, "edge-1"), 0).current(); c == nil {
		t.Error("the cluster's own stored certificate is not used")
	}
	if c, _ := newCertSource("edge-1b", hub, storeWith(t, "edge-1"), 0).current(); c != nil {
		t.Errorf("edge-1b uses the stored certificate of %s", c.Leaf.Subject.CommonName)
	}
}

// TestAwaitEnds: waiting for a request ends when the hub refuses the
// credential it was made with (it expired or lost its rights meanwhile),
// and a denial as an earlier member's renewal makes the next request use
// the bootstrap credential.
func TestAwaitEnds(t *testing.T) {
	hub := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent-edge-1-x", UID: "u1"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	refused := fake.NewClientset()
	refused.PrependReactor("get", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewUnauthorized("certificate has expired")
	})
	s := newCertSource("edge-1", hub, storeWith(t, "edge-1"), 0)
	if _, err := s.await(ctx, refused, csr, "certificate", logr.Discard()); err == nil || !strings.Contains(err.Error(), "unauthenticated") {
		t.Errorf("await with a refused credential: %v, want the refusal explained", err)
	}

	denied := csr.DeepCopy()
	denied.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: agentcert.ReasonEarlierMember, Message: "an earlier member's",
	}}
	if _, how, err := s.requester(); err != nil || how != "certificate" {
		t.Fatalf("requester before the denial: %s, %v; want certificate", how, err)
	}
	if _, err := s.await(ctx, fake.NewClientset(denied), csr, "certificate", logr.Discard()); err == nil || !strings.Contains(err.Error(), agentcert.ReasonEarlierMember) {
		t.Errorf("await of a denied request: %v, want the denial", err)
	}
	if _, how, err := s.requester(); err != nil || how != "bootstrap" {
		t.Errorf("requester after an %s denial: %s, %v; want bootstrap", agentcert.ReasonEarlierMember, how, err)
	}
}
