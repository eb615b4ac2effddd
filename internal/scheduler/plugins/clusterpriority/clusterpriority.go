// Package clusterpriority is the ClusterPriority score plugin, the
// "priority ordering" plugin: it ranks clusters by an operator-assigned
// priority label. With replicaScheduling.weightMode Binpack, which fills
// the best-scored clusters first, it makes Flotilla fill clusters in
// priority order (an on-premises cluster before a cloud one, say); give it
// a high weight in the profile so that it outranks the other scores.
package clusterpriority

import (
	"context"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "ClusterPriority"

// Label is the MemberCluster label holding the cluster's priority, a
// decimal integer from 0 to 100; higher is preferred.
const Label = "flotilla.io/priority"

// ClusterPriority scores a cluster with the value of its Label. A missing
// label, or a value that is not an integer from 0 to 100, scores 0.
type ClusterPriority struct{}

var _ framework.ScorePlugin = (*ClusterPriority)(nil)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &ClusterPriority{}, nil
}

// Name returns Name.
func (*ClusterPriority) Name() string { return Name }

// Score is the cluster's priority label, 0 when missing or invalid.
func (*ClusterPriority) Score(_ context.Context, _ framework.CycleState, _ *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	return priority(c.Labels[Label]), nil
}

// priority parses a priority, 0..100; 0 when s is not one.
func priority(s string) int64 {
	if len(s) == 0 || len(s) > 3 {
		return 0
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int64(s[i]-'0')
	}
	if n > framework.MaxScore {
		return 0
	}
	return n
}
