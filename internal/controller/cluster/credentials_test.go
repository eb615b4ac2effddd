package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// createMemberCluster creates a MemberCluster with the given spec and
// deletes it when the test ends.
func createMemberCluster(t *testing.T, name string, spec v1alpha1.MemberClusterSpec) {
	t.Helper()
	ctx := context.Background()
	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := hostClient.Create(ctx, mc); err != nil {
		t.Fatalf("create MemberCluster %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hostClient.Delete(ctx, mc) })
}

// createSecret creates a credentials Secret with the admin token of m and
// deletes it when the test ends.
func createSecret(t *testing.T, name string, m *testenv.Cluster, labels map[string]string) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.SystemNamespace, Labels: labels},
		Data:       map[string][]byte{member.KeyToken: []byte(m.Config.BearerToken), member.KeyCACert: m.Config.CAData},
	}
	if err := hostClient.Create(ctx, secret); err != nil {
		t.Fatalf("create Secret %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hostClient.Delete(ctx, secret) })
	return secret
}

// noSession fails the test if the controller runs a session for name.
func noSession(t *testing.T, name string) {
	t.Helper()
	if s := reconciler.Pool.Current(name); s != nil {
		t.Errorf("a session runs for %s (usable: %v), want none", name, s.Usable())
	}
}

// waitEvent waits for a Warning event with reason about the MemberCluster.
func waitEvent(t *testing.T, name, reason string) {
	t.Helper()
	waitEventOf(t, name, reason, corev1.EventTypeWarning)
}

// waitEventOf waits for an event of type kind with reason about the
// MemberCluster.
func waitEventOf(t *testing.T, name, reason, kind string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%s event %s on %s", kind, reason, name), func(ctx context.Context) error {
		list, err := env.Host.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && e.Type == kind {
				return nil
			}
			if e.InvolvedObject.Name == name {
				seen = append(seen, e.Type+" "+e.Reason)
			}
		}
		return fmt.Errorf("none among %d events; of %s: %v", len(list.Items), name, seen)
	})
}

// readyMessage returns the message of the Ready condition.
func readyMessage(mc *v1alpha1.MemberCluster) string {
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

func TestSecretOfAnotherMemberClusterIsRefused(t *testing.T) {
	startController(t)
	ctx := context.Background()
	m := env.Members[0]
	register(t, "victim", m, "", "")
	waitReady(t, "victim", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)

	// Whoever may edit MemberClusters points one at the victim's Secret.
	createMemberCluster(t, "thief", v1alpha1.MemberClusterSpec{APIEndpoint: m.Config.Host, SecretRef: &v1alpha1.SecretReference{Name: "victim"}})
	mc := waitReady(t, "thief", metav1.ConditionFalse, member.ReasonCredentialsNotBound, 30*time.Second)
	if msg := readyMessage(mc); !strings.Contains(msg, "bound to MemberCluster victim") {
		t.Errorf("Ready message %q does not say whose Secret it is", msg)
	}
	noSession(t, "thief")
	waitEvent(t, "thief", member.ReasonCredentialsNotBound)
	waitReady(t, "victim", metav1.ConditionTrue, member.ReasonReady, time.Second)

	t.Run("a Secret made by hand is used once labelled", func(t *testing.T) {
		m := env.Members[1]
		t.Cleanup(func() { releaseClaim(t, "loose", m) }) // last: after the deletions below
		secret := createSecret(t, "loose", m, nil)
		createMemberCluster(t, "loose", v1alpha1.MemberClusterSpec{APIEndpoint: m.Config.Host, SecretRef: &v1alpha1.SecretReference{Name: "loose"}})
		mc := waitReady(t, "loose", metav1.ConditionFalse, member.ReasonCredentialsNotBound, 30*time.Second)
		if msg := readyMessage(mc); !strings.Contains(msg, "label it "+v1alpha1.LabelMemberCluster+"=loose") {
			t.Errorf("Ready message %q does not say how to bind the Secret", msg)
		}
		noSession(t, "loose")
		secret.Labels = map[string]string{v1alpha1.LabelMemberCluster: "loose"}
		if err := hostClient.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		waitReady(t, "loose", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	})
}

func TestInsecureEndpointIsRefusedWithoutTheFlag(t *testing.T) {
	startController(t)
	// A plain http endpoint that would receive the token: it must never be
	// asked anything.
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	createSecret(t, "plain", env.Members[0], map[string]string{v1alpha1.LabelMemberCluster: "plain"})
	createMemberCluster(t, "plain", v1alpha1.MemberClusterSpec{APIEndpoint: srv.URL, SecretRef: &v1alpha1.SecretReference{Name: "plain"}})
	mc := waitReady(t, "plain", metav1.ConditionFalse, member.ReasonInsecureEndpoint, 30*time.Second)
	if msg := readyMessage(mc); !strings.Contains(msg, "plain http") || !strings.Contains(msg, "--allow-insecure-members") {
		t.Errorf("Ready message %q does not explain the refusal and the flag", msg)
	}
	noSession(t, "plain")
	waitEvent(t, "plain", member.ReasonInsecureEndpoint)
	if n := requests.Load(); n != 0 {
		t.Errorf("the http endpoint got %d requests, want none", n)
	}

	m := env.Members[1]
	t.Cleanup(func() { releaseClaim(t, "skipverify", m) }) // last: after the deletions below
	createSecret(t, "skipverify", m, map[string]string{v1alpha1.LabelMemberCluster: "skipverify"})
	createMemberCluster(t, "skipverify", v1alpha1.MemberClusterSpec{APIEndpoint: m.Config.Host, SecretRef: &v1alpha1.SecretReference{Name: "skipverify"},
		TLS: &v1alpha1.TLSOptions{InsecureSkipVerify: true}})
	mc = waitReady(t, "skipverify", metav1.ConditionFalse, member.ReasonInsecureEndpoint, 30*time.Second)
	if msg := readyMessage(mc); !strings.Contains(msg, "insecureSkipVerify") {
		t.Errorf("Ready message %q does not name insecureSkipVerify", msg)
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionInsecureTransport); c != nil {
		t.Errorf("refused member has condition %+v", c)
	}
	noSession(t, "skipverify")
}

// memberNamespace reads the member's flotilla-system namespace.
func memberNamespace(ctx context.Context, m *testenv.Cluster) (*corev1.Namespace, error) {
	return m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
}

func TestSecondMemberClusterForAClaimedMemberIsRefused(t *testing.T) {
	startController(t)
	ctx := context.Background()
	m := env.Members[0]
	register(t, "first", m, "", "")
	waitReady(t, "first", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	// The controller recorded the claim in the member, as join does.
	hostNS, err := env.Host.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := memberNamespace(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Annotations[v1alpha1.AnnotationControlPlaneID] != string(hostNS.UID) || ns.Annotations[v1alpha1.AnnotationClusterName] != "first" {
		t.Fatalf("member namespace annotations %v, want control plane %s and name first", ns.Annotations, hostNS.UID)
	}

	register(t, "second", m, "", "")
	mc := waitReady(t, "second", metav1.ConditionFalse, member.ReasonClaimedElsewhere, 30*time.Second)
	if msg := readyMessage(mc); !strings.Contains(msg, `as MemberCluster "first"`) {
		t.Errorf("Ready message %q does not name the owner", msg)
	}
	waitEvent(t, "second", member.ReasonClaimedElsewhere)
	if reconciler.Pool.Get("second") != nil || slices.Contains(reconciler.Sessions(), "second") {
		t.Errorf("the refused member has a usable session (sessions %v)", reconciler.Sessions())
	}
	if mc.Status.NodeCount != 0 || len(mc.Status.APIResources) != 0 {
		t.Errorf("the refused member's status has nodes or API resources from the member: %d nodes, %d resources", mc.Status.NodeCount, len(mc.Status.APIResources))
	}
	waitReady(t, "first", metav1.ConditionTrue, member.ReasonReady, time.Second)

	// A new session of the owner (the Secret changed) writes nothing to the
	// member: the claim is already its own.
	old := reconciler.Pool.Get("first")
	secret := &corev1.Secret{}
	if err := hostClient.Get(ctx, types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: "first"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["note"] = []byte("rotated")
	if err := hostClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "a new usable session for first", func(context.Context) error {
		if s := reconciler.Pool.Get("first"); s == nil || s == old {
			return fmt.Errorf("session %p (old %p)", s, old)
		}
		return nil
	})
	after, err := memberNamespace(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != ns.ResourceVersion {
		t.Errorf("member namespace written (resourceVersion %s → %s): %v", ns.ResourceVersion, after.ResourceVersion, after.Annotations)
	}
}

func TestMemberClaimedByAnotherControlPlaneIsRefused(t *testing.T) {
	startController(t)
	ctx := context.Background()
	m := env.Members[1]
	claim := map[string]string{v1alpha1.AnnotationControlPlaneID: "another-control-plane", v1alpha1.AnnotationClusterName: "elsewhere"}
	testenv.Eventually(t, 60*time.Second, "member namespace claimed by another control plane", func(ctx context.Context) error {
		ns, err := memberNamespace(ctx, m)
		switch {
		case apierrors.IsNotFound(err):
			_, err = m.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace, Annotations: claim}}, metav1.CreateOptions{})
			return err
		case err != nil:
			return err
		case ns.DeletionTimestamp != nil:
			return fmt.Errorf("namespace terminating")
		}
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		for k, v := range claim {
			ns.Annotations[k] = v
		}
		_, err = m.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		return err
	})
	t.Cleanup(func() { releaseClaim(t, "elsewhere", m) })

	register(t, "late", m, "", "")
	mc := waitReady(t, "late", metav1.ConditionFalse, member.ReasonClaimedElsewhere, 30*time.Second)
	if msg := readyMessage(mc); !strings.Contains(msg, "another Flotilla control plane") || !strings.Contains(msg, "another-control-plane") {
		t.Errorf("Ready message %q does not name the other control plane", msg)
	}
	if reconciler.Pool.Get("late") != nil {
		t.Error("the refused member has a usable session")
	}
	ns, err := memberNamespace(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Annotations[v1alpha1.AnnotationClusterName] != "elsewhere" {
		t.Errorf("the other control plane's claim was changed: %v", ns.Annotations)
	}
}
