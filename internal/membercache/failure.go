package membercache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failureClass says what kind of failure a member's list or watch met, in
// words any reader of the gateway may see. The error's own text is for
// the gateway's log only: it names the member's endpoint (or the agent
// tunnel's address) and what the member's apiserver said, which a
// namespace user reading pods through the gateway has no business seeing.
func failureClass(err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case apierrors.IsUnauthorized(err):
		return "the member refuses the gateway's credentials"
	case apierrors.IsForbidden(err):
		return "the member forbids the gateway to list them"
	case apierrors.IsNotFound(err):
		return "the member does not serve them"
	case apierrors.IsTooManyRequests(err):
		return "the member's apiserver is overloaded"
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return "the member's apiserver timed out"
	case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
		return "the member's apiserver failed"
	case apierrors.ReasonForError(err) != metav1.StatusReasonUnknown:
		return fmt.Sprintf("the member's apiserver answered %s", apierrors.ReasonForError(err))
	case untrusted(err):
		return "the gateway does not trust the member's serving certificate"
	default:
		return "the member's apiserver cannot be reached"
	}
}

// untrusted reports whether err is a TLS verification failure.
func untrusted(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}
