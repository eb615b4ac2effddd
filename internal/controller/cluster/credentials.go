package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

// DefaultTokenRenewal is the fraction of a push member token's lifetime
// after which the controller renews it.
const DefaultTokenRenewal = 0.8

// renewRetry is how soon a failed renewal is tried again.
const renewRetry = time.Minute

// renewTimeout bounds one token renewal's call to the member.
const renewTimeout = 30 * time.Second

// Reasons of the credential renewal events.
const (
	reasonCredentialsRenewed    = "CredentialsRenewed"
	reasonCredentialsNotRenewed = "CredentialsRenewalFailed"
)

// tokenOf returns the live Token of member name's session, if it uses one.
func (r *Reconciler) tokenOf(name string) *member.Token {
	if t, ok := r.tokens.Load(name); ok {
		return t.(*member.Token)
	}
	return nil
}

// renewToken renews the expiring ServiceAccount token in a push member's
// credentials Secret once the configured fraction of its lifetime has
// passed: it asks the member for a new token of the same ServiceAccount
// and lifetime with the current one (TokenRequest) and patches the Secret;
// the session takes the new token in place. It returns when to look again
// (0: never, for a token that does not expire or is not a
// ServiceAccount's, such as a legacy or static token).
func (r *Reconciler) renewToken(ctx context.Context, mc *v1alpha1.MemberCluster, now time.Time) time.Duration {
	if mc.Spec.SyncMode == v1alpha1.SyncModePull || mc.Spec.SecretRef == nil || r.tokenOf(mc.Name) == nil {
		return 0
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.CredentialsNamespace, Name: mc.Spec.SecretRef.Name}, secret); err != nil {
		return 0 // observe reports a missing Secret
	}
	claims, ok := member.ParseTokenClaims(string(secret.Data[member.KeyToken]))
	if !ok {
		return 0
	}
	ns, sa, ok := claims.ServiceAccount()
	if !ok {
		return 0
	}
	fraction := r.TokenRenewal
	if fraction <= 0 || fraction >= 1 {
		fraction = DefaultTokenRenewal
	}
	at := claims.RenewAt(fraction)
	// At most one attempt per renewRetry: the Secret a renewal writes
	// comes back through the cache a moment later, and until it does the
	// cached token still looks due; a failure is not retried at every
	// reconcile either.
	if last, ok := r.renewed.Load(mc.Name); ok {
		if next := last.(time.Time).Add(renewRetry); at.Before(next) {
			at = next
		}
	}
	if now.Before(at) {
		return at.Sub(now)
	}
	logger := ctrl.LoggerFrom(ctx)
	r.renewed.Store(mc.Name, now)
	// Bounded: a member that takes the connection and never answers would
	// otherwise hold a worker that every member's health shares.
	rctx, cancel := context.WithTimeout(ctx, renewTimeout)
	token, err := r.requestToken(rctx, mc, secret, ns, sa, claims.Lifetime())
	cancel()
	if err == nil {
		err = r.storeToken(ctx, secret, token)
	}
	if apierrors.IsConflict(err) {
		// The cached Secret is older than the stored one: try again with
		// the newer one in a moment, without an event.
		r.renewed.Delete(mc.Name)
		logger.V(1).Info("Renewed token not stored: the Secret changed meanwhile; retrying", "secret", secret.Namespace+"/"+secret.Name)
		return time.Second
	}
	if err != nil {
		msg := fmt.Sprintf("renew the control plane's token for the member (ServiceAccount %s/%s, expires %s): %v; retrying in %s, or re-run `flotilla join %s`",
			ns, sa, claims.Expiry.UTC().Format(time.RFC3339), err, renewRetry, mc.Name)
		logger.Error(err, "Renewing the member's token failed", "serviceAccount", ns+"/"+sa, "expires", claims.Expiry.UTC())
		if prev, _ := r.renewFailure.Swap(mc.Name, err.Error()); prev != err.Error() && r.Recorder != nil {
			// One event per new error, not one per attempt while the
			// member stays down.
			r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, reasonCredentialsNotRenewed, "RenewToken", "%s", msg)
		}
		return renewRetry
	}
	r.renewFailure.Delete(mc.Name)
	if live := r.tokenOf(mc.Name); live != nil {
		live.Set(token)
	}
	next, _ := member.ParseTokenClaims(token)
	logger.Info("Renewed the member's token", "serviceAccount", ns+"/"+sa, "expires", next.Expiry.UTC())
	if r.Recorder != nil {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, reasonCredentialsRenewed, "RenewToken",
			"renewed the control plane's token for ServiceAccount %s/%s in the member; it expires %s", ns, sa, next.Expiry.UTC().Format(time.RFC3339))
	}
	return max(next.RenewAt(fraction).Sub(now), renewRetry)
}

// requestToken asks the member, with the current credentials, for a new
// token of ServiceAccount ns/sa.
func (r *Reconciler) requestToken(ctx context.Context, mc *v1alpha1.MemberCluster, secret *corev1.Secret, ns, sa string, lifetime time.Duration) (string, error) {
	cfg, err := member.RESTConfig(mc, secret)
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(lifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if _, ok := member.ParseTokenClaims(tr.Status.Token); !ok {
		return "", fmt.Errorf("the member returned a token without an expiry")
	}
	return tr.Status.Token, nil
}

// storeToken writes token into the credentials Secret (a merge patch of
// that one key, guarded by the Secret's resourceVersion).
func (r *Reconciler) storeToken(ctx context.Context, secret *corev1.Secret, token string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": secret.ResourceVersion},
		"data":     map[string][]byte{member.KeyToken: []byte(token)},
	})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, secret, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("store the renewed token in Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}
