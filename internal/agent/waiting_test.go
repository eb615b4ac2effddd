package agent

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestWaitingFor: while the agent has no certificate its readiness says
// why, including the last failure once there is one.
func TestWaitingFor(t *testing.T) {
	s := newCertSource("edge-1", &rest.Config{Host: "https://hub.example.com"}, &memStore{}, 0)
	if got := s.waitingFor(); got != "waiting for the hub to sign the agent's certificate" {
		t.Errorf("before any attempt: %q", got)
	}
	s.lastErr = explainRefusal(errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"), "bootstrap")
	if got := s.waitingFor(); !strings.Contains(got, "the last attempt failed (retried with back-off)") || !strings.Contains(got, "connection refused") {
		t.Errorf("after a failure: %q, want the failure", got)
	}
}
