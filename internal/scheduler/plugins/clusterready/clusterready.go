// Package clusterready is the ClusterReady filter plugin: it keeps new
// placements off member clusters that are not Ready.
package clusterready

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "ClusterReady"

// reasonNotReady is the exclusion reason.
const reasonNotReady = "not Ready"

// ClusterReady is a filter: a cluster whose Ready condition is not True
// (False, Unknown, or not reported yet) is excluded with the reason "not
// Ready", unless the object is already placed there: existing placements
// stay, moving them off an unhealthy cluster is failover's job.
type ClusterReady struct{}

var _ framework.FilterPlugin = (*ClusterReady)(nil)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &ClusterReady{}, nil
}

// Name returns Name.
func (*ClusterReady) Name() string { return Name }

// Filter excludes a cluster that is not Ready and does not hold the
// object.
func (*ClusterReady) Filter(_ context.Context, _ framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	if meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady) {
		return nil
	}
	if _, placed := u.CurrentReplicas(c.Name); placed {
		return nil
	}
	return &framework.Status{Code: framework.Unschedulable, Reason: reasonNotReady}
}
