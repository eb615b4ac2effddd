// Package placement is the Placement filter plugin: it keeps an object on
// the clusters its placement's clusterNames and clusterSelector allow.
package placement

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "Placement"

// stateKey is where Prepare leaves the decision's compiled placement.
const stateKey = Name

// Exclusion reasons.
const (
	reasonNames    = "not in clusterNames"
	reasonSelector = "do not match clusterSelector"
)

// setFrom is the number of clusterNames from which Prepare builds a set;
// shorter lists are scanned.
const setFrom = 16

// Placement is a filter: when placement.clusterNames is set, a cluster
// must be listed ("not in clusterNames" otherwise); when
// placement.clusterSelector is set, its labels must match it ("do not
// match clusterSelector" otherwise; an empty selector matches every
// cluster). The selector is parsed once per decision, in Prepare; an
// invalid one fails the decision.
type Placement struct{}

var (
	_ framework.PreparePlugin = (*Placement)(nil)
	_ framework.FilterPlugin  = (*Placement)(nil)
)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &Placement{}, nil
}

// Name returns Name.
func (*Placement) Name() string { return Name }

// compiled is a placement's names and selector, ready for per-cluster
// calls.
type compiled struct {
	names    []string            // clusterNames, when scanned
	set      map[string]struct{} // clusterNames, when long
	selector labels.Selector     // nil without a clusterSelector
}

// none is a placement without names or selector.
var none = &compiled{}

// Prepare parses the placement's selector for the decision.
func (*Placement) Prepare(_ context.Context, state framework.CycleState, u *framework.Unit, _ []*v1alpha1.MemberCluster) *framework.Status {
	cp, err := compile(u.Placement)
	if err != nil {
		return framework.NewError(err)
	}
	state[stateKey] = cp
	return nil
}

// Filter excludes a cluster the names or the selector leave out.
func (*Placement) Filter(_ context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	cp, ok := state[stateKey].(*compiled)
	if !ok {
		var err error
		if cp, err = compile(u.Placement); err != nil {
			return framework.NewError(err)
		}
	}
	if !cp.named(c.Name) {
		return &framework.Status{Code: framework.Unschedulable, Reason: reasonNames}
	}
	if cp.selector != nil && !cp.selector.Matches(labels.Set(c.Labels)) {
		return &framework.Status{Code: framework.Unschedulable, Reason: reasonSelector}
	}
	return nil
}

// named reports whether the names allow the cluster.
func (cp *compiled) named(name string) bool {
	if cp.set != nil {
		_, ok := cp.set[name]
		return ok
	}
	if cp.names == nil {
		return true
	}
	for _, n := range cp.names {
		if n == name {
			return true
		}
	}
	return false
}

func compile(p *v1alpha1.Placement) (*compiled, error) {
	if p == nil || (len(p.ClusterNames) == 0 && p.ClusterSelector == nil) {
		return none, nil
	}
	cp := &compiled{}
	switch n := len(p.ClusterNames); {
	case n >= setFrom:
		cp.set = make(map[string]struct{}, n)
		for _, name := range p.ClusterNames {
			cp.set[name] = struct{}{}
		}
	case n > 0:
		cp.names = p.ClusterNames
	}
	if p.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("clusterSelector: %w", err)
		}
		cp.selector = sel
	}
	return cp, nil
}
