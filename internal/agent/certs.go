package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agentcert"
)

// certStore keeps the agent's current certificate and key (the client-go
// file store, or memory when the agent has no --cert-dir).
type certStore interface {
	Current() (*tls.Certificate, error)
	Update(certPEM, keyPEM []byte) (*tls.Certificate, error)
}

// memStore is a certStore that forgets on restart.
type memStore struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

func (m *memStore) Current() (*tls.Certificate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cert == nil {
		return nil, errors.New("no certificate yet")
	}
	return m.cert, nil
}

func (m *memStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cert = &c
	return &c, nil
}

// Timing of the certificate loop.
const (
	// pollFirst and pollMax bound the interval between reads of a
	// request the agent waits on.
	pollFirst, pollMax = time.Second, 15 * time.Second
	// retryFirst and retryMax bound the back-off after a failed request
	// (refused credential, denial, hub not answering).
	retryFirst, retryMax = 5 * time.Second, 5 * time.Minute
	// remindEvery repeats the "waiting for acceptance" log line.
	remindEvery = 5 * time.Minute
)

// certSource gets the agent's client certificate from the hub and renews
// it: with the current certificate while it is valid, else with the
// bootstrap credential. Clients built by restConfig always present the
// newest certificate; renewal closes their connections so that they
// reconnect with it.
type certSource struct {
	cluster   string
	bootstrap *rest.Config // the hub's endpoint and CA, and the bootstrap token
	store     certStore
	lifetime  time.Duration // asked for; the hub may give less
	dialer    *connrotation.Dialer
	now       func() time.Time

	mu      sync.RWMutex
	cur     *tls.Certificate
	renewAt time.Time
	lastErr error // of the last failed attempt, nil after a success
	// stale is set when the hub refused a renewal made with the current
	// certificate because it was signed for an earlier MemberCluster of
	// this name: the next request uses the bootstrap credential.
	stale    bool
	ready    chan struct{} // closed once cur is set
	readyOne sync.Once
}

// newCertSource loads the stored certificate, if any.
func newCertSource(cluster string, bootstrap *rest.Config, store certStore, lifetime time.Duration) *certSource {
	s := &certSource{
		cluster: cluster, bootstrap: bootstrap, store: store, lifetime: lifetime, now: time.Now,
		dialer: connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		ready:  make(chan struct{}),
	}
	// A stored certificate counts while it is valid by this machine's
	// clock and names this cluster (a certificate directory reused for a
	// member joined under a new name holds the old name's); any other is
	// replaced with the bootstrap credential.
	if c, err := store.Current(); err == nil && c.Leaf != nil && s.now().Before(c.Leaf.NotAfter) &&
		c.Leaf.Subject.CommonName == agentcert.Subject(cluster).CommonName {
		s.set(c, s.now(), false)
	}
	return s
}

// set makes c current; received is when it arrived (now, for a stored
// one: renewal is then judged on this machine's clock).
func (s *certSource) set(c *tls.Certificate, received time.Time, fresh bool) {
	s.mu.Lock()
	s.cur = c
	if fresh {
		s.renewAt = received.Add(agentcert.RenewAfter(c.Leaf))
	} else {
		s.renewAt = agentcert.IssuedAt(c.Leaf).Add(agentcert.RenewAfter(c.Leaf))
	}
	s.mu.Unlock()
	s.readyOne.Do(func() { close(s.ready) })
}

// waitingFor says what the agent waits for while it has no certificate:
// the hub's signature, and why the last attempt failed if it did.
func (s *certSource) waitingFor() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	msg := "waiting for the hub to sign the agent's certificate"
	if s.lastErr != nil {
		msg += "; the last attempt failed (retried with back-off): " + s.lastErr.Error()
	}
	return msg
}

// current returns the certificate and when to renew it.
func (s *certSource) current() (*tls.Certificate, time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur, s.renewAt
}

// clientCertificate is the TLS hook of the hub clients.
func (s *certSource) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c, _ := s.current(); c != nil {
		return c, nil
	}
	return &tls.Certificate{}, nil
}

// restConfig is a hub client configuration that presents the current
// certificate: the bootstrap configuration's endpoint and CA, without
// its token.
func (s *certSource) restConfig(base *rest.Config) (*rest.Config, error) {
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{Host: base.Host, TLSClientConfig: rest.TLSClientConfig{
		CAFile: base.CAFile, CAData: base.CAData, ServerName: base.ServerName, Insecure: base.Insecure,
	}})
	if err != nil {
		return nil, fmt.Errorf("hub TLS configuration: %w", err)
	}
	if tlsCfg == nil {
		return nil, fmt.Errorf("the hub %s is not reached over TLS: an agent certificate needs https", base.Host)
	}
	tlsCfg.GetClientCertificate = s.clientCertificate
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsCfg,
		MaxIdleConnsPerHost: 25, DialContext: s.dialer.DialContext,
	})
	return &rest.Config{Host: base.Host, APIPath: base.APIPath, Transport: transport, UserAgent: base.UserAgent, Timeout: base.Timeout}, nil
}

// wait blocks until a certificate is current, logging while the hub has
// not signed one.
func (s *certSource) wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run keeps a valid certificate until ctx ends.
func (s *certSource) run(ctx context.Context) {
	logger := ctrl.LoggerFrom(ctx).WithName("certificate")
	backoff := retryFirst
	for {
		cur, renewAt := s.current()
		if cur != nil {
			if d := renewAt.Sub(s.now()); d > 0 {
				logger.V(1).Info("Next certificate renewal", "at", renewAt.UTC(), "notAfter", cur.Leaf.NotAfter.UTC())
				if !sleep(ctx, d) {
					return
				}
			}
		}
		err := s.renew(ctx, logger)
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		if err == nil {
			backoff = retryFirst
			continue
		}
		logger.Error(err, "Getting the agent's certificate failed; retrying", "in", backoff)
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, retryMax)
	}
}

// renew asks for a new certificate and waits until the hub signs it.
func (s *certSource) renew(ctx context.Context, logger logr.Logger) error {
	cs, how, err := s.requester()
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate a key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: agentcert.Subject(s.cluster)}, key)
	if err != nil {
		return fmt.Errorf("create the certificate request: %w", err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "flotilla-agent-" + s.cluster + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: v1alpha1.SignerAgent, Usages: agentcert.Usages,
		},
	}
	if s.lifetime > 0 {
		csr.Spec.ExpirationSeconds = ptr.To(int32(min(s.lifetime/time.Second, math.MaxInt32)))
	}
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil && how == "certificate" && apierrors.IsUnauthorized(err) {
		// The hub counts the certificate expired (its clock may be ahead
		// of this one): ask with the bootstrap credential.
		logger.Error(explainRefusal(err, how), "Falling back to the bootstrap credential")
		if cs, err = kubernetes.NewForConfig(s.bootstrap); err != nil {
			return err
		}
		how = "bootstrap"
		created, err = cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	}
	if err != nil {
		if how == "bootstrap" && (apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)) {
			// A renewal denied as an earlier member's sent us here, but the
			// bootstrap credential is refused too: ask with the certificate
			// again while it is valid (the hub renews it once the member
			// is older than a certificate lifetime).
			s.mu.Lock()
			s.stale = false
			s.mu.Unlock()
		}
		return explainRefusal(err, how)
	}
	logger.Info("Asked the hub for the agent's certificate", "csr", created.Name, "credential", how)
	certPEM, err := s.await(ctx, cs, created, how, logger)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	c, err := s.store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("store the new certificate: %w", err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return err
		}
	}
	now := s.now()
	if skew := agentcert.Skew(c.Leaf, now); skew > agentcert.MaxSkew || skew < -agentcert.MaxSkew {
		logger.Error(fmt.Errorf("this machine's clock is %s off the hub's", skew.Round(time.Second)), "Clock skew: the hub signed the certificate at "+
			agentcert.IssuedAt(c.Leaf).UTC().Format(time.RFC3339)+" by its clock; renewals are timed from receipt, but fix this machine's time (NTP)",
			"localTime", now.UTC())
	}
	old, _ := s.current()
	rotated := old != nil
	s.set(c, now, true)
	s.mu.Lock()
	s.stale = false
	s.mu.Unlock()
	if rotated {
		// Open connections keep the old certificate: reconnect.
		s.dialer.CloseAll()
	}
	logger.Info("Got the agent's certificate", "csr", created.Name, "subject", c.Leaf.Subject.CommonName,
		"notAfter", c.Leaf.NotAfter.UTC(), "renewAt", now.Add(agentcert.RenewAfter(c.Leaf)).UTC(), "rotated", rotated)
	return nil
}

// requester is the client that asks for a certificate: the current
// certificate while it is valid, else the bootstrap credential.
func (s *certSource) requester() (kubernetes.Interface, string, error) {
	s.mu.RLock()
	stale := s.stale
	s.mu.RUnlock()
	if cur, _ := s.current(); cur != nil && s.now().Before(cur.Leaf.NotAfter) && !stale {
		cfg, err := s.restConfig(s.bootstrap)
		if err != nil {
			return nil, "", err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		return cs, "certificate", err
	}
	cs, err := kubernetes.NewForConfig(s.bootstrap)
	return cs, "bootstrap", err
}

// await polls the request until the hub signs or denies it, or refuses
// the credential it was made with (how), which may expire or lose its
// rights while the request waits: the next attempt then asks anew, with
// the bootstrap credential if the certificate has expired.
func (s *certSource) await(ctx context.Context, cs kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, how string, logger logr.Logger) ([]byte, error) {
	interval := pollFirst
	var reminded time.Time
	for {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("certificate signing request %s was deleted before it was signed (the hub deletes requests of members not accepted after an hour); asking again", csr.Name)
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			return nil, fmt.Errorf("read certificate signing request %s: %w", csr.Name, explainRefusal(err, how))
		case err != nil:
			logger.Error(err, "Reading the certificate signing request failed; retrying", "csr", csr.Name)
		case got.UID != csr.UID:
			return nil, fmt.Errorf("certificate signing request %s was replaced by another", csr.Name)
		default:
			for _, c := range got.Status.Conditions {
				if c.Type == certificatesv1.CertificateDenied && c.Reason == agentcert.ReasonEarlierMember {
					s.mu.Lock()
					s.stale = true
					s.mu.Unlock()
				}
				if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
					return nil, fmt.Errorf("certificate signing request %s was %s (%s: %s)", csr.Name, map[bool]string{true: "denied", false: "failed"}[c.Type == certificatesv1.CertificateDenied], c.Reason, c.Message)
				}
			}
			if len(got.Status.Certificate) > 0 {
				return got.Status.Certificate, nil
			}
			if now := s.now(); now.Sub(reminded) >= remindEvery {
				reminded = now
				logger.Info("Waiting for the hub to accept this cluster and sign the agent's certificate (a hub admin runs `flotilla accept "+s.cluster+"`)", "csr", csr.Name)
			}
		}
		if !sleep(ctx, interval) {
			return nil, ctx.Err()
		}
		interval = min(interval*2, pollMax)
	}
}

// explainRefusal turns the hub's refusal of a certificate request into
// what the operator should check.
func explainRefusal(err error, how string) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the hub refused the %s credential as unauthenticated (expired, revoked or not the hub's; with the bootstrap credential, get a new file from `flotilla join --mode pull --bootstrap-kubeconfig`): %w", how, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the hub forbade the %s credential to ask for a certificate (was the member unjoined?): %w", how, err)
	case utilnet.IsConnectionRefused(err) || isNetError(err):
		return fmt.Errorf("the hub does not answer (check the server in the kubeconfig and the network path from this member to the hub): %w", err)
	}
	return fmt.Errorf("ask the hub for the agent's certificate with the %s credential: %w", how, err)
}

// isNetError reports whether err is a failure to reach the hub at all (DNS,
// dial, timeout) rather than an answer from it.
func isNetError(err error) bool {
	var netErr net.Error
	var dnsErr *net.DNSError
	var opErr *net.OpError
	return errors.As(err, &dnsErr) || errors.As(err, &opErr) || (errors.As(err, &netErr) && netErr.Timeout())
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
