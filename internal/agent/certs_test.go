package agent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/agentcert"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// runCertAgent runs an agent for cluster with the bootstrap credential
// and certificate directory dir until the test ends. It shares member-1
// with the package's pull member; nothing is placed on it.
func runCertAgent(t *testing.T, cluster string, bootstrap *rest.Config, dir string) (stop func()) {
	t.Helper()
	return runAgent(t, cluster, "cert-agent", func(o *agent.Options) { o.Bootstrap, o.CertDir = bootstrap, dir })
}

// runAgent runs an agent for cluster on member-1, with the package's
// timing, until stop is called or the test ends; hub sets its credentials
// on the hub.
func runAgent(t *testing.T, cluster, identity string, hub func(*agent.Options)) (stop func()) {
	t.Helper()
	o := agent.DefaultOptions()
	o.Cluster, o.Member = cluster, env.Cluster("member-1").Config
	o.LeaderElect, o.ProbeAddr, o.MetricsAddr = false, "0", "0"
	o.Identity, o.Session, o.Heartbeat = identity, fastSession, 500*time.Millisecond
	hub(&o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := agent.Run(ctx, o); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "agent %s: %v\n", cluster, err)
		}
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// joinBootstrap registers a pull member, not accepted, and returns its
// bootstrap credential.
func joinBootstrap(t *testing.T, name string) *rest.Config {
	t.Helper()
	creds, err := join.JoinPull(context.Background(), join.PullOptions{Name: name, Host: env.Host.Config, Labels: map[string]string{"mode": "cert"}, BootstrapDuration: time.Hour})
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	cfg, err := clientcmd.RESTConfigFromKubeConfig(creds.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitCondition waits until MemberCluster name's condition typ has status
// want and a reason in reasons, and returns it.
func waitCondition(t *testing.T, name, typ string, want metav1.ConditionStatus, reasons ...string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("MemberCluster %s %s=%s %v", name, typ, want, reasons), func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := admin.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return err
		}
		got = meta.FindStatusCondition(mc.Status.Conditions, typ)
		if got == nil || got.Status != want || (len(reasons) > 0 && !contains(reasons, got.Reason)) {
			return fmt.Errorf("%s: %+v", typ, got)
		}
		return nil
	})
	return got
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// storedCertificate reads the agent's current certificate from its
// directory and a hub configuration that presents it.
func storedCertificate(t *testing.T, dir string, bootstrap *rest.Config) (*x509.Certificate, *rest.Config) {
	t.Helper()
	path := filepath.Join(dir, "flotilla-agent-current.pem")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent's stored certificate: %v", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: bootstrap.Host, TLSClientConfig: rest.TLSClientConfig{CAData: bootstrap.CAData, CertFile: path, KeyFile: path}}
	return cert, cfg
}

// TestCertificateBootstrapAcceptAndRotate follows a pull member from join
// to a renewed certificate: pending and given nothing until accepted, a
// bootstrap credential that can only ask, acceptance refused to a
// non-admin, the agent switching to its own certificate (confined like
// any agent), renewal without losing Ready, and unjoin revoking it.
func TestCertificateBootstrapAcceptAndRotate(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	const name = "cert-1"
	bootstrap := joinBootstrap(t, name)
	dir := t.TempDir()
	stopAgent := runCertAgent(t, name, bootstrap, dir)

	// Pending: the request is shown, the member is not Ready, and it has
	// no session, so nothing is written for it.
	c := waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionFalse, v1alpha1.ReasonPendingAcceptance)
	if !strings.Contains(c.Message, "flotilla-agent-"+name+"-") || !strings.Contains(c.Message, agentcert.BootstrapUser(name)) {
		t.Errorf("Accepted message %q names neither the request nor its sender", c.Message)
	}
	waitCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionFalse, "NotAccepted")
	intents := &v1alpha1.ClusterIntentList{}
	if err := admin.List(ctx, intents, client.InNamespace(v1alpha1.ClusterNamespace(name))); err != nil || len(intents.Items) != 0 {
		t.Errorf("intents for the pending member: %d (%v), want none", len(intents.Items), err)
	}

	// The bootstrap credential asks and does nothing else.
	boot := newClientFor(t, bootstrap)
	for what, err := range map[string]error{
		"list certificate requests":     boot.List(ctx, &certificatesv1.CertificateSigningRequestList{}),
		"list its cluster's intents":    boot.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(name))),
		"read its MemberCluster":        boot.Get(ctx, types.NamespacedName{Name: name}, &v1alpha1.MemberCluster{}),
		"list Secrets in its namespace": boot.List(ctx, &corev1.SecretList{}, client.InNamespace(v1alpha1.ClusterNamespace(name))),
		"accept itself":                 boot.Patch(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"accepted":true}}`))),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s with the bootstrap credential: got %v, want 403 Forbidden", what, err)
		}
	}

	// A user who may edit MemberClusters but not accept them is refused by
	// the admission policy.
	operator := "fleet-operator-" + name
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operator}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters"}, Verbs: []string{"get", "patch", "update"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: operator},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operator},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operator}}}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}
	opCfg := rest.CopyConfig(env.Host.Config)
	opCfg.Impersonate = rest.ImpersonationConfig{UserName: operator}
	testenv.Eventually(t, waitTimeout, "the accept guard refuses a fleet operator", func(ctx context.Context) error {
		err := join.Accept(ctx, opCfg, name, true)
		if err == nil {
			return fmt.Errorf("a user without memberclusters/accept accepted %s", name)
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "memberclusters/accept") {
			return fmt.Errorf("got %v, want the accept guard's refusal", err)
		}
		return nil
	})
	if err := admin.Patch(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"edge"}}}`))); err != nil {
		t.Errorf("an edit that leaves spec.accepted alone: %v", err)
	}

	// Accepted by an admin: the request is signed, the agent switches to
	// its certificate and the member becomes Ready.
	if err := join.Accept(ctx, env.Host.Config, name, true); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionTrue, v1alpha1.ReasonAccepted)
	waitCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	first, certCfg := storedCertificate(t, dir, bootstrap)
	joined := &v1alpha1.MemberCluster{}
	if err := admin.Get(ctx, types.NamespacedName{Name: name}, joined); err != nil {
		t.Fatal(err)
	}
	if want := []string{v1alpha1.AgentGroup, agentcert.MemberGroup(joined.UID)}; first.Subject.CommonName != v1alpha1.AgentUserPrefix+name || !slices.Equal(first.Subject.Organization, want) {
		t.Errorf("certificate subject %v, want organizations %q", first.Subject, want)
	}
	if got := first.NotAfter.Sub(agentcert.IssuedAt(first)); got > certLifetime+time.Second {
		t.Errorf("certificate valid for %s after signing, want at most the signer's %s", got, certLifetime)
	}
	withCert := newClientFor(t, certCfg)
	if err := withCert.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(name))); err != nil {
		t.Errorf("list its own intents with its certificate: %v", err)
	}
	for what, err := range map[string]error{
		"list another cluster's intents": withCert.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(pullName))),
		"list Secrets":                   withCert.List(ctx, &corev1.SecretList{}),
		"list certificate requests":      withCert.List(ctx, &certificatesv1.CertificateSigningRequestList{}),
		"read another MemberCluster":     withCert.Get(ctx, types.NamespacedName{Name: pullName}, &v1alpha1.MemberCluster{}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s with the agent's certificate: got %v, want 403 Forbidden", what, err)
		}
	}

	// Renewal at 80% of the lifetime, asked with the certificate itself;
	// the member stays Ready through it.
	var renewed *x509.Certificate
	testenv.Eventually(t, certLifetime*3, "the agent renews its certificate", func(context.Context) error {
		renewed, _ = storedCertificate(t, dir, bootstrap)
		if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still the first certificate (valid until %s)", first.NotAfter.UTC())
		}
		return nil
	})
	if !renewed.NotBefore.After(first.NotBefore) {
		t.Errorf("renewed certificate starts %s, not after the first's %s", renewed.NotBefore, first.NotBefore)
	}
	requests := &certificatesv1.CertificateSigningRequestList{}
	if err := admin.List(ctx, requests); err != nil {
		t.Fatal(err)
	}
	renewals := 0
	for _, r := range requests.Items {
		if c, ok := agentcert.ClusterOf(&r); ok && c == name && r.Spec.Username == v1alpha1.AgentUserPrefix+name {
			renewals++
		}
	}
	if renewals == 0 {
		t.Errorf("no certificate request from %s%s: the renewal did not use the certificate", v1alpha1.AgentUserPrefix, name)
	}
	mc := &v1alpha1.MemberCluster{}
	if err := admin.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.Time.After(first.NotBefore.Add(agentcert.Backdate+certLifetime/2)) {
		t.Errorf("Ready after the renewal: %+v (want True since before the renewal)", c)
	}

	// Unjoin revokes the certificate's access.
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: name, Host: env.Host.Config}); err != nil {
		t.Fatal(err)
	}
	_, certCfg = storedCertificate(t, dir, bootstrap)
	withCert = newClientFor(t, certCfg)
	testenv.Eventually(t, waitTimeout, "the unjoined agent's certificate is refused", func(ctx context.Context) error {
		if err := withCert.Get(ctx, types.NamespacedName{Name: name}, &v1alpha1.MemberCluster{}); !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("read its MemberCluster: %v", err)
		}
		if err := withCert.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(name))); !apierrors.IsForbidden(err) {
			return fmt.Errorf("list its intents: %v", err)
		}
		return nil
	})

	// Joined again under the same name (another cluster, say): the old
	// certificate's user name is bound again, but the hub does not renew
	// it, so it cannot outlive its lifetime.
	stopAgent()
	newBootstrap := joinBootstrap(t, name)
	if err := join.Accept(ctx, env.Host.Config, name, true); err != nil {
		t.Fatal(err)
	}
	rejoined := &v1alpha1.MemberCluster{}
	if err := admin.Get(ctx, types.NamespacedName{Name: name}, rejoined); err != nil {
		t.Fatal(err)
	}
	oldCert, err := kubernetes.NewForConfig(certCfg)
	if err != nil {
		t.Fatal(err)
	}
	var renewal *certificatesv1.CertificateSigningRequest
	testenv.Eventually(t, waitTimeout, "a renewal with the old certificate is created", func(ctx context.Context) error {
		renewal, err = oldCert.CertificatesV1().CertificateSigningRequests().Create(ctx, certificateRequest(t, name), metav1.CreateOptions{})
		return err
	})
	var denied *certificatesv1.CertificateSigningRequestCondition
	testenv.Eventually(t, waitTimeout, "the renewal with the old certificate answered", func(ctx context.Context) error {
		got, err := oldCert.CertificatesV1().CertificateSigningRequests().Get(ctx, renewal.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Certificate) > 0 {
			t.Errorf("the hub signed a renewal made with the certificate of the earlier %s", name)
			return nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied {
				denied = &c
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	if denied != nil && (denied.Reason != agentcert.ReasonEarlierMember || !strings.Contains(denied.Message, "earlier MemberCluster")) {
		t.Errorf("denied with %s: %q, want %s naming the earlier MemberCluster", denied.Reason, denied.Message, agentcert.ReasonEarlierMember)
	}

	// The same cluster's agent started again with the new join's bootstrap
	// credential and its old certificate directory: its renewal with the
	// old certificate is denied, and it gets one of the new member with
	// the bootstrap credential.
	runCertAgent(t, name, newBootstrap, dir)
	testenv.Eventually(t, certLifetime*3, "the agent holds a certificate of the new member", func(context.Context) error {
		cert, _ := storedCertificate(t, dir, newBootstrap)
		if !slices.Contains(cert.Subject.Organization, agentcert.MemberGroup(rejoined.UID)) {
			return fmt.Errorf("the stored certificate's organizations are %q", cert.Subject.Organization)
		}
		return nil
	})
	waitCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// certificateRequest is a request for cluster's agent certificate with a
// new key, as an agent makes it.
func certificateRequest(t *testing.T, cluster string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: agentcert.Subject(cluster)}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "flotilla-agent-" + cluster + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: v1alpha1.SignerAgent, Usages: agentcert.Usages,
		},
	}
}

// TestCertificateDeniedAndBadBootstrap: a denied request shows on the
// MemberCluster and the agent asks again; a bootstrap credential the hub
// does not know is refused with an error that says so.
func TestCertificateDeniedAndBadBootstrap(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	const name = "cert-denied"
	bootstrap := joinBootstrap(t, name)
	runCertAgent(t, name, bootstrap, "")
	c := waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionFalse, v1alpha1.ReasonPendingAcceptance)
	csrName := strings.Fields(strings.TrimPrefix(c.Message, "certificate signing request "))[0]
	cs, err := kubernetes.NewForConfig(env.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	// kubectl certificate deny, as an admin.
	csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csrName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NotOurs", Message: "unknown site",
	})
	if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csrName, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionFalse, v1alpha1.ReasonCSRDenied)
	if !strings.Contains(c.Message, csrName) || !strings.Contains(c.Message, "unknown site") {
		t.Errorf("CSRDenied message %q lacks the request or the admin's message", c.Message)
	}
	// The agent backs off and asks again with a new request.
	c = waitCondition(t, name, v1alpha1.ConditionAccepted, metav1.ConditionFalse, v1alpha1.ReasonPendingAcceptance)
	if strings.Contains(c.Message, csrName+" ") {
		t.Errorf("after the denial the condition still names %s: %q", csrName, c.Message)
	}
	waitCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionFalse, "NotAccepted")

	// A bootstrap credential the hub does not know.
	bad := rest.CopyConfig(bootstrap)
	bad.BearerToken = "not-a-token"
	err = agent.AskOnce(ctx, name, bad)
	if err == nil || !strings.Contains(err.Error(), "refused the bootstrap credential as unauthenticated") {
		t.Errorf("asking with a bad bootstrap credential: %v, want the refusal explained", err)
	}

	// A hub URL that does not answer: a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := rest.CopyConfig(bootstrap)
	silent.Host = "https://" + l.Addr().String()
	_ = l.Close()
	err = agent.AskOnce(ctx, name, silent)
	if err == nil || !strings.Contains(err.Error(), "the hub does not answer") {
		t.Errorf("asking a hub that does not answer: %v, want that said", err)
	}
}
