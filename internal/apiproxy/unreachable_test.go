package apiproxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 3, 7), Port: 6443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		err  error
		want string
	}{
		{refused, "the connection was refused"},
		{fmt.Errorf("proxy: %w", context.DeadlineExceeded), "it timed out"},
		{context.Canceled, "the request was cancelled"},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "the connection was reset"},
		{fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), "its serving certificate is not trusted"},
		{errors.New("dial tcp 10.0.3.7:6443: no route to host"), "it cannot be reached"},
	}
	for _, tc := range tests {
		got := Unreachable(tc.err)
		if got != tc.want {
			t.Errorf("Unreachable(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if strings.Contains(got, "10.0.3.7") {
			t.Errorf("Unreachable(%v) names the address: %q", tc.err, got)
		}
	}
}
