package manager

import (
	"fmt"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseLock returns the leader election lock for a replica with a chosen
// identity (Options.LeaderElectionIdentity), or nil for
// controller-runtime's own (the host name and a random suffix). The
// lock's clients time out after half the renew deadline (at least a
// second), as controller-runtime's do, so that one hung request cannot
// cost the lease.
func leaseLock(cfg *rest.Config, opts Options) (resourcelock.Interface, error) {
	if !opts.LeaderElect || opts.LeaderElectionIdentity == "" {
		return nil, nil
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = max(opts.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaderElectionNamespace, opts.LeaderElectionID,
		core, coordination, resourcelock.ResourceLockConfig{Identity: opts.LeaderElectionIdentity})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, nil
}
