package membercache

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFailureClass(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	endpoint := "https://10.1.2.3:6443/api/v1/pods"
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"none", nil, ""},
		{"refused", &url.Error{Op: "Get", URL: endpoint, Err: syscall.ECONNREFUSED}, "the member's apiserver cannot be reached"},
		{"unauthorized", apierrors.NewUnauthorized("token expired for https://10.1.2.3"), "the member refuses the gateway's credentials"},
		{"forbidden", apierrors.NewForbidden(pods, "", errors.New("user flotilla-gateway")), "the member forbids the gateway to list them"},
		{"not served", apierrors.NewNotFound(pods, ""), "the member does not serve them"},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), "the member's apiserver is overloaded"},
		{"server timeout", apierrors.NewServerTimeout(pods, "list", 1), "the member's apiserver timed out"},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), "the member's apiserver timed out"},
		{"internal", apierrors.NewInternalError(errors.New("etcd at 10.0.0.9 down")), "the member's apiserver failed"},
		{"unavailable", apierrors.NewServiceUnavailable("etcd"), "the member's apiserver failed"},
		{"other status", apierrors.NewBadRequest("odd"), "the member's apiserver answered BadRequest"},
		{"untrusted", &url.Error{Op: "Get", URL: endpoint, Err: x509.UnknownAuthorityError{}}, "the gateway does not trust the member's serving certificate"},
		{"wrong name", &url.Error{Op: "Get", URL: endpoint, Err: x509.HostnameError{Host: "10.1.2.3"}}, "the gateway does not trust the member's serving certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := failureClass(tc.err)
			if got != tc.want {
				t.Errorf("failureClass(%v) = %q, want %q", tc.err, got, tc.want)
			}
			if strings.Contains(got, "10.") {
				t.Errorf("failureClass(%v) = %q names an address", tc.err, got)
			}
		})
	}
}
