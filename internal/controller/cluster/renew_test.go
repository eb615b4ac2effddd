package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestPushTokenIsRenewedInPlace joins a member as `flotilla join` does,
// with an expiring token of the member's ServiceAccount, and checks that
// the controller renews it (this package renews at once: TokenRenewal is
// tiny), writes it to the Secret and keeps the same session, Ready
// throughout, with the new token working.
func TestPushTokenIsRenewedInPlace(t *testing.T) {
	startController(t)
	ctx := context.Background()
	const name = "renewing"
	m := env.Cluster("member-2")
	if err := join.Join(ctx, join.Options{Name: name, Host: env.Host.Config, Member: m.Config, TokenDuration: 10 * time.Minute}); err != nil {
		t.Fatalf("join: %v", err)
	}
	t.Cleanup(func() {
		if err := join.Unjoin(context.Background(), join.UnjoinOptions{Name: name, Host: env.Host.Config, Member: m.Config}); err != nil {
			t.Errorf("unjoin: %v", err)
		}
		releaseClaim(t, name, m)
	})
	secretKey := types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: name}
	first := &corev1.Secret{}
	if err := hostClient.Get(ctx, secretKey, first); err != nil {
		t.Fatal(err)
	}
	claims, ok := member.ParseTokenClaims(string(first.Data[member.KeyToken]))
	if !ok {
		t.Fatalf("join stored a token that does not expire")
	}
	if ns, sa, _ := claims.ServiceAccount(); ns != v1alpha1.SystemNamespace || sa != join.ServiceAccountName || claims.Lifetime() != 10*time.Minute {
		t.Fatalf("token of %s/%s for %s, want %s/%s for 10m", ns, sa, claims.Lifetime(), v1alpha1.SystemNamespace, join.ServiceAccountName)
	}
	if _, err := m.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, join.TokenSecretName, metav1.GetOptions{}); err == nil {
		t.Errorf("join left the legacy token Secret %s in the member", join.TokenSecretName)
	}
	waitReady(t, name, metav1.ConditionTrue, member.ReasonReady, 60*time.Second)
	session := reconciler.Pool.Current(name)

	var renewed string
	testenv.Eventually(t, 60*time.Second, "the controller renews the token", func(ctx context.Context) error {
		s := &corev1.Secret{}
		if err := hostClient.Get(ctx, secretKey, s); err != nil {
			return err
		}
		if renewed = string(s.Data[member.KeyToken]); renewed == string(first.Data[member.KeyToken]) {
			return fmt.Errorf("still the token join stored")
		}
		return nil
	})
	// Renewed once, not at every reconcile its own Secret write causes
	// (at most once a minute, whatever the renewal fraction).
	deadline := time.Now().Add(3 * time.Second)
	for tick := time.NewTicker(100 * time.Millisecond); time.Now().Before(deadline); <-tick.C {
		s := &corev1.Secret{}
		if err := hostClient.Get(ctx, secretKey, s); err != nil {
			t.Fatal(err)
		}
		if string(s.Data[member.KeyToken]) != renewed {
			t.Fatalf("the token was renewed again within seconds: renewals are not damped")
		}
	}
	next, ok := member.ParseTokenClaims(renewed)
	if !ok || next.Lifetime() != claims.Lifetime() || next.IssuedAt.Before(claims.IssuedAt) {
		t.Errorf("renewed token: %+v (%v), want the same lifetime, issued later", next, ok)
	}
	if got := reconciler.Pool.Current(name); got != session {
		t.Errorf("the session was replaced for a renewed token; want it kept")
	}
	mc := waitReady(t, name, metav1.ConditionTrue, member.ReasonReady, 10*time.Second)
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.LastTransitionTime.Time.After(next.IssuedAt) {
		t.Errorf("Ready changed at %s, after the renewal at %s", c.LastTransitionTime, next.IssuedAt)
	}
	// The renewed token alone (the one stored now) is the ServiceAccount's.
	review, err := memberClientAs(t, name, m).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if want := "system:serviceaccount:" + v1alpha1.SystemNamespace + ":" + join.ServiceAccountName; err != nil || review.Status.UserInfo.Username != want {
		t.Errorf("the renewed token in the member: %v, %+v; want it to authenticate as %s", err, review, want)
	}
	waitEventOf(t, name, "CredentialsRenewed", corev1.EventTypeNormal)
}
