// Package applied tells whether a write that returned an error may still
// have taken effect on the API server. A timeout, a dropped connection or
// a server error can come after the server stored the change; a refusal
// (invalid, forbidden, a failed precondition, throttled before it was
// handled) cannot. Safety brakes that give back what a write took (an
// eviction token, a scaling-history entry) give it back only when the
// write surely did not apply.
package applied

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Maybe reports whether a write that failed with err may have been
// applied: true for anything but an error the server returns instead of
// handling the write (nil counts as applied).
func Maybe(err error) bool {
	switch {
	case err == nil:
		return true
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err), apierrors.IsGone(err),
		apierrors.IsResourceExpired(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsUnauthorized(err), apierrors.IsTooManyRequests(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err):
		return false
	}
	return true
}
