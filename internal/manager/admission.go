package manager

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/config/admission"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// Create cannot be limited to names; get and update are, to Flotilla's own
// policies and bindings (config/admission).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;update,resourceNames=flotilla.io-accept-guard;flotilla.io-deletion-protection;flotilla.io-scale-down-protection

// admissionInstaller installs Flotilla's admission policies (the guard of
// spec.accepted and, unless turned off, deletion protection) once this replica leads; objects already up to date are not
// written.
type admissionInstaller struct {
	cfg    *rest.Config
	sets   []admission.Set
	logger logr.Logger
}

// NeedLeaderElection makes the manager start the installer only on the
// leader.
func (admissionInstaller) NeedLeaderElection() bool { return true }

// Start installs the policies, retrying for upgradeTimeout; a host that
// keeps refusing them stops the manager with the error.
func (a admissionInstaller) Start(ctx context.Context) error {
	var res admission.Result
	err := poll.Until(ctx, upgradeTimeout, func(ctx context.Context) error {
		var err error
		if res, err = admission.Ensure(ctx, a.cfg, a.sets...); err != nil {
			a.logger.Error(err, "Installing the flotilla.io admission policies; retrying")
		}
		return err
	})
	switch {
	case ctx.Err() != nil:
		return nil // shutting down, or leadership lost
	case err != nil:
		return fmt.Errorf("install the flotilla.io admission policies: %w", err)
	}
	if len(res.Created)+len(res.Updated) > 0 {
		a.logger.Info("Installed the flotilla.io admission policies", "created", res.Created, "updated", res.Updated)
	}
	return nil
}
