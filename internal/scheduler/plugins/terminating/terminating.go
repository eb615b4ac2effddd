// Package terminating is the Terminating filter plugin: it keeps objects
// off member clusters that are leaving the federation.
package terminating

import (
	"context"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "Terminating"

// reasonDeleted is the exclusion reason.
const reasonDeleted = "being deleted"

// Terminating is a filter: a MemberCluster with a deletionTimestamp is
// excluded with the reason "being deleted", whether or not the object is
// placed there, so its objects move before the cluster goes.
type Terminating struct{}

var _ framework.FilterPlugin = (*Terminating)(nil)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &Terminating{}, nil
}

// Name returns Name.
func (*Terminating) Name() string { return Name }

// Filter excludes a cluster being deleted.
func (*Terminating) Filter(_ context.Context, _ framework.CycleState, _ *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	if c.DeletionTimestamp == nil {
		return nil
	}
	return &framework.Status{Code: framework.Unschedulable, Reason: reasonDeleted}
}
