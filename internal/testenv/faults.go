package testenv

import (
	"context"
	"syscall"
	"testing"
)

// Signal sends sig to a component of a cluster ("kube-apiserver" of
// "member-2", say): SIGKILL crashes it, SIGSTOP freezes it with its
// connections open, SIGCONT resumes it. A stopped component is resumed when
// the test ends, and a killed one restarted.
func (e *Environment) Signal(t testing.TB, cluster, component string, sig syscall.Signal) {
	t.Helper()
	if err := e.env.Signal(cluster, component, sig); err != nil {
		t.Fatal(err)
	}
	switch sig {
	case syscall.SIGSTOP:
		t.Cleanup(func() { _ = e.env.Signal(cluster, component, syscall.SIGCONT) })
	case syscall.SIGKILL, syscall.SIGTERM:
		// Bring it back for the next test if this one did not.
		t.Cleanup(func() { _ = e.env.Restart(context.Background(), cluster, component, false) })
	}
}

// Restart starts a component that was killed again, with its data, and
// waits until it is healthy.
func (e *Environment) Restart(t testing.TB, cluster, component string) {
	t.Helper()
	if err := e.env.Restart(context.Background(), cluster, component, false); err != nil {
		t.Fatal(err)
	}
}
