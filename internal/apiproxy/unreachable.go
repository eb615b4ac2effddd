package apiproxy

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
)

// Unreachable says why an apiserver behind a proxy did not answer, in
// words that name no address or certificate: what a user of the proxy may
// read. The error itself belongs in the proxy's log.
func Unreachable(err error) string {
	var netErr net.Error
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "it timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the connection was reset"
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return "its serving certificate is not trusted"
	}
	return "it cannot be reached"
}
