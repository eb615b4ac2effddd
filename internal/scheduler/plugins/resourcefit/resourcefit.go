// Package resourcefit is the ResourceFit filter plugin: it keeps an object
// off member clusters without room for one of its replicas.
package resourcefit

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "ResourceFit"

// stateKey is where Prepare leaves the decision's requests.
const stateKey = Name

// ResourceFit is a filter, not in the default profile: when the unit's
// per-replica requests are known, a cluster's status.resources.available
// must hold at least one replica's worth of every requested resource. A
// resource the cluster does not report counts as none available (a cluster
// whose resources have not been collected yet has none), so an object
// requesting nvidia.com/gpu only goes where GPUs are reported free.
//
// With simulated scheduling (Unit.Fits), a cluster with a node-level view
// passes only if at least one replica fits on one of its nodes: one whose
// taints, node selector and required affinity allow the pod and whose
// free resources hold its requests, after other decisions' reservations.
// The reason then says what the nodes have: "no node fits a replica (most
// free on one node: cpu 2)". Clusters without a view (pull members) are
// judged by the sums.
//
// A cluster the object is already placed on passes: its own pods use part
// of what the cluster reports, and evicting it for that would move running
// replicas; how many more it gets is the replicas plugin's business.
//
// The reason names the first missing resource in name order:
// "insufficient cpu".
type ResourceFit struct{}

var (
	_ framework.PreparePlugin = (*ResourceFit)(nil)
	_ framework.FilterPlugin  = (*ResourceFit)(nil)
)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &ResourceFit{}, nil
}

// Name returns Name.
func (*ResourceFit) Name() string { return Name }

// request is one requested resource.
type request struct {
	name     corev1.ResourceName
	quantity resource.Quantity
	reason   string
}

// requests are the unit's positive requests in name order.
type requests []request

// Prepare sorts the requests and formats their reasons once for the
// decision.
func (*ResourceFit) Prepare(_ context.Context, state framework.CycleState, u *framework.Unit, _ []*v1alpha1.MemberCluster) *framework.Status {
	rs := compile(u.Requests)
	state[stateKey] = &rs
	return nil
}

// Filter excludes a cluster, not holding the object yet, that lacks room
// for one replica.
func (*ResourceFit) Filter(_ context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	if f, ok := u.Fits[c.Name]; ok {
		if _, placed := u.CurrentReplicas(c.Name); placed || f.Replicas > 0 {
			return nil
		}
		return &framework.Status{Code: framework.Unschedulable, Reason: "no node fits a replica (" + f.Limit() + ")"}
	}
	if u.Requests == nil {
		return nil
	}
	var rs requests
	if p, ok := state[stateKey].(*requests); ok {
		rs = *p
	} else {
		rs = compile(u.Requests)
	}
	available := c.Status.Resources.Available
	for i := range rs {
		r := &rs[i]
		free := available[r.name]
		if free.Cmp(r.quantity) >= 0 {
			continue
		}
		if _, placed := u.CurrentReplicas(c.Name); placed {
			return nil
		}
		return &framework.Status{Code: framework.Unschedulable, Reason: r.reason}
	}
	return nil
}

func compile(list corev1.ResourceList) requests {
	rs := make(requests, 0, len(list))
	for name, q := range list {
		if q.Sign() > 0 {
			rs = append(rs, request{name: name, quantity: q, reason: "insufficient " + string(name)})
		}
	}
	slices.SortFunc(rs, func(a, b request) int { return cmp.Compare(a.name, b.name) })
	return rs
}
