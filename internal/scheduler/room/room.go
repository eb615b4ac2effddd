// Package room answers what the replica and group planners ask of a member
// cluster: how many of a unit's replicas it has room for (from the
// simulated estimate, else its status.resources sums), whether its nodes
// can grow (elastic, within a node budget) and what it costs.
package room

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// Unlimited is the room of a cluster for a unit without requests or
// replicas in the sums' view: nothing limits it.
const Unlimited = int64(1) << 40

// Replicas returns how many of u's replicas c has room for: the simulated
// fit where there is one (Unit.Fits), else the available amount of the
// unit's main resource (cpu, else memory, else pods) over one replica's
// request, counting the unit's own current replicas there as room.
func Replicas(u *framework.Unit, c *v1alpha1.MemberCluster) int64 {
	if f, ok := u.Fits[c.Name]; ok {
		return max(f.Replicas, 0)
	}
	held := int64(0)
	if r, ok := u.CurrentReplicas(c.Name); ok && r != nil {
		held = int64(max(*r, 0))
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := u.Requests[name]; ok {
			if per := nodefit.Amount(name, q); per > 0 {
				avail := c.Status.Resources.Available[name]
				return max(nodefit.Amount(name, avail), 0)/per + held
			}
		}
	}
	if pods, ok := c.Status.Resources.Available[corev1.ResourcePods]; ok {
		return max(pods.Value(), 0) + held
	}
	return Unlimited
}

// Elastic reports whether c's nodes can grow, and by how many nodes
// (Unlimited without a budget): the label flotilla.io/elastic is "true" or
// a node budget (flotilla.io/node-budget) is set, and the member has fewer
// nodes than its budget.
func Elastic(c *v1alpha1.MemberCluster) (bool, int64) {
	budget, hasBudget := c.Labels[v1alpha1.LabelNodeBudget]
	if !hasBudget {
		return c.Labels[v1alpha1.LabelElastic] == "true", Unlimited
	}
	n, err := strconv.ParseInt(strings.TrimSpace(budget), 10, 64)
	if err != nil || n < 0 {
		return false, 0 // a budget nobody can read grows nothing
	}
	headroom := n - int64(c.Status.NodeCount)
	return headroom > 0, max(headroom, 0)
}

// Cost returns c's relative cost (flotilla.io/cost); 0 without the label
// or when it is not a non-negative integer.
func Cost(c *v1alpha1.MemberCluster) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(c.Labels[v1alpha1.LabelCost]), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
