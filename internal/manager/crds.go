package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// crdUpgrader brings the CRDs to this binary's version once this replica
// is the leader: a standby never changes an existing CRD, so an older
// standby cannot downgrade the CRDs a newer leader installed. CRDs already
// up to date are not written.
type crdUpgrader struct {
	cfg    *rest.Config
	logger logr.Logger
}

// NeedLeaderElection makes the manager start the upgrader only on the
// leader.
func (crdUpgrader) NeedLeaderElection() bool { return true }

// Start upgrades the CRDs, retrying for upgradeTimeout; a CRD the host
// keeps refusing stops the manager with the error.
func (u crdUpgrader) Start(ctx context.Context) error {
	var res crd.Result
	err := poll.Until(ctx, upgradeTimeout, func(ctx context.Context) error {
		var err error
		if res, err = crd.Ensure(ctx, u.cfg, crd.Upgrade); err != nil {
			u.logger.Error(err, "Upgrading the flotilla.io CRDs; retrying")
		}
		return err
	})
	switch {
	case ctx.Err() != nil:
		return nil // shutting down, or leadership lost
	case err != nil:
		return fmt.Errorf("upgrade the flotilla.io CRDs: %w", err)
	}
	if len(res.Created)+len(res.Updated) > 0 {
		u.logger.Info("Upgraded the flotilla.io CRDs", "created", res.Created, "updated", res.Updated)
	} else {
		u.logger.V(1).Info("The flotilla.io CRDs are up to date")
	}
	return nil
}

// upgradeTimeout bounds the leader's retries of a failing CRD upgrade.
const upgradeTimeout = 2 * time.Minute
