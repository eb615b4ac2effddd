package manager

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestLeaseLock: a chosen identity gets its own lock on the configured
// Lease; without one (or without leader election) controller-runtime
// builds its own, with a new random identity per process.
func TestLeaseLock(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	for _, tc := range []struct {
		name     string
		elect    bool
		identity string
		wantLock bool
	}{
		{"default identity", true, "", false},
		{"stable identity", true, "flotilla-0", true},
		{"no leader election", false, "flotilla-0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.LeaderElect, opts.LeaderElectionIdentity = tc.elect, tc.identity
			lock, err := leaseLock(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if (lock != nil) != tc.wantLock {
				t.Fatalf("lock = %v, want a lock: %v", lock, tc.wantLock)
			}
			if lock == nil {
				return
			}
			if got := lock.Identity(); got != tc.identity {
				t.Errorf("identity = %q, want %q", got, tc.identity)
			}
			if got, want := lock.Describe(), opts.LeaderElectionNamespace+"/"+opts.LeaderElectionID; got != want {
				t.Errorf("lock on %q, want %q", got, want)
			}
		})
	}
}
