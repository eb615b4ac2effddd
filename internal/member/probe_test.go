package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readyzFailedBody is what kube-apiserver answers on /readyz when etcd is
// down (status 500).
const readyzFailedBody = `[+]ping ok
[+]log ok
[-]etcd failed: reason withheld
[+]informer-sync ok
[+]poststarthook/start-apiserver-admission-initializer ok
readyz check failed
`

// timeoutError is a net.Error that timed out, as a dial or TLS handshake
// timeout is.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

func urlError(err error) error {
	return &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/readyz", Err: err}
}

func TestClassify(t *testing.T) {
	refused := urlError(&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 6443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	tests := []struct {
		name         string
		status       int
		body         string
		err          error
		wantHealth   Health
		wantReason   string
		wantContains []string
		wantAbsent   []string
	}{
		{
			name:       "200 ok is healthy",
			status:     http.StatusOK,
			body:       "ok",
			wantHealth: Healthy, wantReason: ReasonReady,
		},
		{
			name:       "401 refuses the credentials",
			status:     http.StatusUnauthorized,
			err:        apierrors.NewUnauthorized("Unauthorized"),
			wantHealth: NotReady, wantReason: ReasonUnauthorized, wantContains: []string{"401"},
		},
		{
			name:       "403 forbids /readyz",
			status:     http.StatusForbidden,
			err:        apierrors.NewForbidden(schema.GroupResource{}, "/readyz", errors.New("no RBAC policy matched")),
			wantHealth: NotReady, wantReason: ReasonForbidden, wantContains: []string{"403"},
		},
		{
			name:       "500 with failed readyz checks names the failed check",
			status:     http.StatusInternalServerError,
			body:       readyzFailedBody,
			err:        apierrors.NewGenericServerResponse(http.StatusInternalServerError, "get", schema.GroupResource{}, "", readyzFailedBody, 0, true),
			wantHealth: NotReady, wantReason: ReasonAPIServerNotReady,
			wantContains: []string{"500", "[-]etcd failed: reason withheld"},
			wantAbsent:   []string{"[+]ping ok", "\n"},
		},
		{
			name:       "503 without a body falls back to the error",
			status:     http.StatusServiceUnavailable,
			err:        errors.New("the server is currently unable to handle the request"),
			wantHealth: NotReady, wantReason: ReasonAPIServerNotReady,
			wantContains: []string{"503", "unable to handle the request"},
		},
		{
			name:       "429 is not ready, not unreachable",
			status:     http.StatusTooManyRequests,
			err:        apierrors.NewTooManyRequests("slow down", 1),
			wantHealth: NotReady, wantReason: ReasonAPIServerNotReady,
			wantContains: []string{"429", "slow down"},
		},
		{
			name:       "404 is not ready, not unreachable",
			status:     http.StatusNotFound,
			body:       "404 page not found",
			err:        apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "", "404 page not found", 0, true),
			wantHealth: NotReady, wantReason: ReasonAPIServerNotReady,
			wantContains: []string{"404 page not found"},
		},
		{
			name:       "long answers are cut",
			status:     http.StatusInternalServerError,
			body:       strings.Repeat("x", 1000),
			err:        errors.New("server error"),
			wantHealth: NotReady, wantReason: ReasonAPIServerNotReady,
			wantContains: []string{"xxx..."},
			wantAbsent:   []string{strings.Repeat("x", 301)},
		},
		{
			name:       "connection refused is unreachable",
			err:        refused,
			wantHealth: Unreachable, wantReason: ReasonUnreachable,
			wantContains: []string{"connection refused"},
			wantAbsent:   []string{"https://10.0.0.1:6443/readyz"},
		},
		{
			name:       "deadline exceeded is unreachable and timed out",
			err:        context.DeadlineExceeded,
			wantHealth: Unreachable, wantReason: ReasonUnreachable,
			wantContains: []string{"timed out"},
		},
		{
			name:       "deadline exceeded inside a url error is timed out",
			err:        urlError(fmt.Errorf("send request: %w", context.DeadlineExceeded)),
			wantHealth: Unreachable, wantReason: ReasonUnreachable,
			wantContains: []string{"timed out"},
		},
		{
			name:       "net timeout is timed out",
			err:        urlError(&net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}),
			wantHealth: Unreachable, wantReason: ReasonUnreachable,
			wantContains: []string{"timed out"},
		},
		{
			name:       "no status and no error is unreachable",
			wantHealth: Unreachable, wantReason: ReasonUnreachable,
			wantContains: []string{"no answer"},
		},
	}
	at := sec(42)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.status, []byte(tt.body), tt.err, at)
			if got.Health != tt.wantHealth || got.Reason != tt.wantReason {
				t.Errorf("Classify() = %s/%s, want %s/%s (message %q)", got.Health, got.Reason, tt.wantHealth, tt.wantReason, got.Message)
			}
			if !got.At.Equal(at) {
				t.Errorf("At = %v, want %v", got.At, at)
			}
			if got.Message == "" {
				t.Errorf("Message is empty")
			}
			for _, s := range tt.wantContains {
				if !strings.Contains(got.Message, s) {
					t.Errorf("Message %q does not contain %q", got.Message, s)
				}
			}
			for _, s := range tt.wantAbsent {
				if strings.Contains(got.Message, s) {
					t.Errorf("Message %q contains %q", got.Message, s)
				}
			}
		})
	}
}
