// Package apienablement is the APIEnablement filter plugin: it keeps an
// object off the member clusters that do not serve its kind, or do not let
// the control plane write it.
package apienablement

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "APIEnablement"

// stateKey is where Prepare leaves the decision's exclusion reasons.
const stateKey = Name

// reasons are a decision's exclusion reasons, formatted once.
type reasons struct{ unserved, readOnly string }

// APIEnablement is a filter: a cluster passes when its status.apiResources
// lists the unit's group, version and kind. A cluster whose resources have
// not been discovered yet (an empty list) passes, so a newly joined member
// is not held back; propagation reports the kind as unserved if it is.
//
// A cluster whose entry for the kind is ReadOnly (the member's RBAC does
// not let the control plane write it: a restricted join) is excluded too.
//
// Excluded clusters get the reason "do not serve <group>/<version> <Kind>"
// ("do not serve v1 ConfigMap" for the core group), or "do not let the
// control plane write <group>/<version> <Kind> (member RBAC)".
type APIEnablement struct{}

var (
	_ framework.PreparePlugin = (*APIEnablement)(nil)
	_ framework.FilterPlugin  = (*APIEnablement)(nil)
)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &APIEnablement{}, nil
}

// Name returns Name.
func (*APIEnablement) Name() string { return Name }

// Prepare formats the exclusion reason once for the decision.
func (*APIEnablement) Prepare(_ context.Context, state framework.CycleState, u *framework.Unit, _ []*v1alpha1.MemberCluster) *framework.Status {
	state[stateKey] = reasonsFor(u.GVK)
	return nil
}

// Filter excludes a cluster that has discovered its resources and does not
// serve the unit's kind.
func (*APIEnablement) Filter(_ context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	rs := c.Status.APIResources
	if len(rs) == 0 {
		return nil
	}
	served, writable := serves(rs, u.GVK)
	if served && writable {
		return nil
	}
	r, ok := state[stateKey].(reasons)
	if !ok {
		r = reasonsFor(u.GVK)
	}
	if served {
		return &framework.Status{Code: framework.Unschedulable, Reason: r.readOnly}
	}
	return &framework.Status{Code: framework.Unschedulable, Reason: r.unserved}
}

func reasonsFor(gvk schema.GroupVersionKind) reasons {
	gv := gvk.GroupVersion().String() + " " + gvk.Kind
	return reasons{unserved: "do not serve " + gv, readOnly: "do not let the control plane write " + gv + " (member RBAC)"}
}

// serves reports whether rs lists gvk, and if so whether the control
// plane may write it there (not ReadOnly). The list is kept sorted by group,
// version and resource, so two binary searches bound the group/version run
// and only its kinds are compared; a linear scan backs them up in case a
// list is not sorted.
func serves(rs []v1alpha1.APIResource, gvk schema.GroupVersionKind) (served, writable bool) {
	lo := search(rs, gvk, 0)
	hi := search(rs[lo:], gvk, 1) + lo
	for i := lo; i < hi; i++ {
		if rs[i].Kind == gvk.Kind {
			return true, !rs[i].ReadOnly
		}
	}
	for i := range rs {
		if r := &rs[i]; r.Kind == gvk.Kind && r.Version == gvk.Version && r.Group == gvk.Group {
			return true, !r.ReadOnly
		}
	}
	return false, false
}

// search returns the first index whose group/version compares with gvk's
// at least at: 0 finds the start of gvk's run, 1 its end.
func search(rs []v1alpha1.APIResource, gvk schema.GroupVersionKind, at int) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compare(&rs[m], gvk) < at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// compare orders r's group/version against gvk's.
func compare(r *v1alpha1.APIResource, gvk schema.GroupVersionKind) int {
	if c := strings.Compare(r.Group, gvk.Group); c != 0 {
		return c
	}
	return strings.Compare(r.Version, gvk.Version)
}
