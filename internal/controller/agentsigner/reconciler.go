package agentsigner

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agentcert"
)

// Name is the controller's name for --controllers.
const Name = "agent-signer"

// Keep is how long a request stays after it was created: a finished one
// (issued, denied, failed) is deleted then, and so is one still waiting
// for its member to be accepted (its agent sends a new one).
const Keep = time.Hour

// Reasons of the approval and denial conditions this controller sets.
const (
	reasonAccepted      = "MemberClusterAccepted"
	reasonInvalid       = "InvalidRequest"
	reasonUnknown       = "UnknownCluster"
	reasonStale         = agentcert.ReasonEarlierMember
	reasonSigningFailed = "SigningFailed"
)

// Reconciler approves, signs, denies and cleans up the agent signer's
// requests.
type Reconciler struct {
	// Client reads the host through the manager's cache.
	Client client.Client
	// Certificates writes approvals, certificates and deletions.
	Certificates kubernetes.Interface
	// Signer signs the certificates.
	Signer *agentcert.Signer
	// Recorder records events on the MemberClusters.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the controller: it watches the agent
// signer's requests, and MemberClusters so that accepting one signs its
// waiting requests at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == v1alpha1.SignerAgent
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(ours)).
		Watches(&v1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.requestsOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// requestsOf maps a MemberCluster to the agent signer's requests for it.
func (r *Reconciler) requestsOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing certificate signing requests")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if c, ok := agentcert.ClusterOf(&list.Items[i]); ok && c == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// Reconcile acts on one request.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != v1alpha1.SignerAgent || !csr.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	now := r.Now()
	age := now.Sub(csr.CreationTimestamp.Time)
	if finished(csr) {
		return r.expire(ctx, csr, age)
	}
	cluster, x509req, err := agentcert.Check(csr)
	if err != nil {
		return reconcile.Result{}, r.deny(ctx, csr, nil, reasonInvalid, err.Error())
	}
	mc := &v1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.deny(ctx, csr, nil, reasonUnknown, fmt.Sprintf("there is no MemberCluster %s", cluster))
	}
	if mc.Spec.SyncMode != v1alpha1.SyncModePull || !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.deny(ctx, csr, mc, reasonUnknown, fmt.Sprintf("MemberCluster %s is not a syncMode Pull member (or is being deleted)", cluster))
	}
	member := agentcert.Member{Name: cluster, UID: mc.UID, Recent: now.Sub(mc.CreationTimestamp.Time) < r.Signer.Lifetime(0)}
	if agentcert.StaleRenewal(member, csr.Spec.Username, csr.Spec.Groups) {
		return reconcile.Result{}, r.deny(ctx, csr, mc, reasonStale, fmt.Sprintf(
			"renewal made with a certificate signed for an earlier MemberCluster %s (removed and joined again): the agent must start again from the new join's bootstrap credential", cluster))
	}
	if !mc.Spec.Accepted {
		// Waits for an admin; the cluster controller shows it in the
		// MemberCluster's Accepted condition.
		return r.expire(ctx, csr, age)
	}
	return reconcile.Result{}, r.issue(ctx, csr, mc, x509req, now)
}

// finished reports whether csr was issued, denied or failed.
func finished(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return true
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return true
		}
	}
	return false
}

// approved reports whether csr carries the Approved condition.
func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// expire deletes csr once it is older than Keep, and otherwise looks at
// it again then.
func (r *Reconciler) expire(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, age time.Duration) (reconcile.Result, error) {
	if age < Keep {
		return reconcile.Result{RequeueAfter: Keep - age}, nil
	}
	err := r.Certificates.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &csr.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return reconcile.Result{}, fmt.Errorf("delete certificate signing request %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted an old certificate signing request", "age", age.Round(time.Second))
	return reconcile.Result{}, nil
}

// deny sets the Denied condition with reason and message, and records an
// event on mc when the request names a known cluster.
func (r *Reconciler) deny(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, mc *v1alpha1.MemberCluster, reason, message string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastUpdateTime: metav1.Now(),
	})
	if _, err := r.Certificates.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("deny certificate signing request %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Denied an agent certificate request", "requester", csr.Spec.Username, "reason", reason, "message", message)
	if mc != nil {
		r.event(mc, corev1.EventTypeWarning, "CertificateDenied", "denied certificate signing request %s from %s: %s", csr.Name, csr.Spec.Username, message)
	}
	return nil
}

// issue approves csr (unless it is approved already) and signs it.
func (r *Reconciler) issue(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, mc *v1alpha1.MemberCluster, req *x509.CertificateRequest, now time.Time) error {
	api := r.Certificates.CertificatesV1().CertificateSigningRequests()
	if !approved(csr) {
		csr = csr.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: reasonAccepted,
			Message: fmt.Sprintf("MemberCluster %s is accepted", mc.Name), LastUpdateTime: metav1.Now(),
		})
		updated, err := api.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("approve certificate signing request %s: %w", csr.Name, err)
		}
		csr = updated
	}
	var lifetime time.Duration
	if s := csr.Spec.ExpirationSeconds; s != nil {
		lifetime = time.Duration(*s) * time.Second
	}
	lifetime = r.Signer.Lifetime(lifetime)
	certPEM, err := r.Signer.Sign(req, mc.UID, lifetime, now)
	if err != nil {
		// The signer's own state (its CA about to expire): final for this
		// request, which the agent replaces after a pause, and shown.
		return r.fail(ctx, csr, mc, err)
	}
	csr = csr.DeepCopy()
	csr.Status.Certificate = certPEM
	if _, err := api.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the certificate of request %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Signed an agent certificate", "cluster", mc.Name, "requester", csr.Spec.Username, "lifetime", lifetime)
	r.event(mc, corev1.EventTypeNormal, "CertificateIssued", "signed certificate signing request %s from %s for %s, valid for %s",
		csr.Name, csr.Spec.Username, v1alpha1.AgentUserPrefix+mc.Name, lifetime)
	return nil
}

// fail sets the Failed condition of an approved csr that could not be
// signed and records a Warning event on mc.
func (r *Reconciler) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, mc *v1alpha1.MemberCluster, cause error) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: reasonSigningFailed, Message: cause.Error(),
		LastUpdateTime: metav1.Now(),
	})
	if _, err := r.Certificates.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark certificate signing request %s failed (%v): %w", csr.Name, cause, err)
	}
	ctrl.LoggerFrom(ctx).Error(cause, "Cannot sign an agent certificate", "cluster", mc.Name, "csr", csr.Name)
	r.event(mc, corev1.EventTypeWarning, "CertificateFailed", "cannot sign certificate signing request %s from %s: %v", csr.Name, csr.Spec.Username, cause)
	return nil
}

// event records an event on mc.
func (r *Reconciler) event(mc *v1alpha1.MemberCluster, eventType, reason, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(mc, nil, eventType, reason, "Certificate", format, args...)
}
