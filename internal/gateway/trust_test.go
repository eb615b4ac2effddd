package gateway_test

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestMemberCredentialsStayBound: the gateway uses a push member's
// credentials by the cluster controller's rules. A MemberCluster that
// names another member's Secret is left out (else whoever may edit
// MemberClusters could send that member's token to an endpoint of their
// choosing), and so is one with a plain http endpoint: no request, and so
// no credential, reaches it.
func TestMemberCredentialsStayBound(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "here", nil)
	admin, warned := adminWithWarnings(t, gw)
	c := hostClient(t)
	alpha := &v1alpha1.MemberCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "alpha"}, alpha); err != nil {
		t.Fatal(err)
	}
	// alpha's endpoint and alpha's Secret under another name: were the
	// Secret usable, alpha's pods would show twice, once as "copycat".
	copycat := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "copycat"},
		Spec: v1alpha1.MemberClusterSpec{APIEndpoint: alpha.Spec.APIEndpoint, SecretRef: alpha.Spec.SecretRef.DeepCopy(), TLS: alpha.Spec.TLS.DeepCopy()}}
	// A bound Secret, but a plain http endpoint that counts what it gets.
	var reached atomic.Int32
	plainServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(plainServer.Close)
	plain := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: v1alpha1.MemberClusterSpec{APIEndpoint: plainServer.URL, SecretRef: &v1alpha1.SecretReference{Name: "plain"}}}
	plainSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: v1alpha1.SystemNamespace,
		Labels: map[string]string{v1alpha1.LabelMemberCluster: "plain"}}, Data: map[string][]byte{"token": []byte("secret-token")}}
	if err := c.Create(ctx, plainSecret); err != nil {
		t.Fatal(err)
	}
	for _, mc := range []*v1alpha1.MemberCluster{copycat, plain} {
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), copycat)
		_ = c.Delete(context.Background(), plain)
		_ = c.Delete(context.Background(), plainSecret)
	})
	testenv.Eventually(t, 30*time.Second, "both members left out with a warning", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		w := strings.Join(warned.take(), "\n")
		if got := podNames(l.Items); !slices.Equal(got, []string{"alpha/here"}) {
			return fmt.Errorf("pods %v (warnings %q)", got, w)
		}
		for _, want := range []string{
			"member copycat is left out: its credentials Secret is not bound to it",
			"member plain is left out: its endpoint is not secure",
		} {
			if !strings.Contains(w, want) {
				return fmt.Errorf("no warning %q in %q", want, w)
			}
		}
		return nil
	})
	if n := reached.Load(); n != 0 {
		t.Errorf("the plain http endpoint got %d requests", n)
	}
}
