// Package clusteraffinity is the ClusterAffinity plugin: the placement's
// required cluster affinity terms keep an object off clusters whose labels
// match none of them (filter), and its preferred terms rank the clusters
// they match (score).
package clusteraffinity

import (
	"context"
	"fmt"
	"strconv"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "ClusterAffinity"

// stateKey is where Prepare leaves the decision's compiled terms.
const stateKey = Name

// reasonRequired is the filter's exclusion reason.
const reasonRequired = "do not match required cluster affinity"

// ClusterAffinity evaluates placement.clusterAffinity against cluster
// labels. A term holds when all its expressions hold (a term without
// expressions holds for every cluster): In and NotIn test the label's
// value against the values (NotIn and DoesNotExist hold when the label is
// absent), Exists and DoesNotExist its presence, Gt and Lt compare it as a
// decimal integer with the single value (an absent or non-integer label
// fails them).
//
// Filter: with required terms, a cluster must match at least one, or it is
// excluded with the reason "do not match required cluster affinity".
//
// Score: the weights of the preferred terms a cluster matches, as a share
// of all preferred weights, scaled to 0..MaxScore; 0 for every cluster
// when there are no preferred terms.
//
// Terms are checked and compiled once per decision, in Prepare; an invalid
// expression (an unknown operator, values missing or superfluous, a
// non-integer Gt/Lt value, a weight outside 1..100) fails the decision.
type ClusterAffinity struct{}

var (
	_ framework.PreparePlugin = (*ClusterAffinity)(nil)
	_ framework.FilterPlugin  = (*ClusterAffinity)(nil)
	_ framework.ScorePlugin   = (*ClusterAffinity)(nil)
)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &ClusterAffinity{}, nil
}

// Name returns Name.
func (*ClusterAffinity) Name() string { return Name }

// operator is a compiled ClusterSelectorOperator.
type operator uint8

const (
	opIn operator = iota
	opNotIn
	opExists
	opDoesNotExist
	opGt
	opLt
)

// operators maps the API's operators to compiled ones.
var operators = map[v1alpha1.ClusterSelectorOperator]operator{
	"In": opIn, "NotIn": opNotIn, "Exists": opExists, "DoesNotExist": opDoesNotExist, "Gt": opGt, "Lt": opLt,
}

// requirement is a compiled ClusterSelectorRequirement.
type requirement struct {
	key    string
	op     operator
	values []string // In, NotIn
	bound  int64    // Gt, Lt
}

// term is a compiled ClusterSelectorTerm: all its requirements hold.
type term []requirement

// compiled is a placement's affinity, ready for per-cluster calls.
type compiled struct {
	required  []term
	preferred []term
	weights   []int64 // of preferred, index for index
	total     int64   // sum of weights
}

// none is the affinity of a placement without one.
var none = &compiled{}

// Prepare compiles the placement's terms for the decision.
func (*ClusterAffinity) Prepare(_ context.Context, state framework.CycleState, u *framework.Unit, _ []*v1alpha1.MemberCluster) *framework.Status {
	cp, err := compile(u)
	if err != nil {
		return framework.NewError(err)
	}
	state[stateKey] = cp
	return nil
}

// load returns the terms Prepare compiled, compiling them when it did not
// run.
func load(state framework.CycleState, u *framework.Unit) (*compiled, *framework.Status) {
	if cp, ok := state[stateKey].(*compiled); ok {
		return cp, nil
	}
	cp, err := compile(u)
	if err != nil {
		return nil, framework.NewError(err)
	}
	return cp, nil
}

// Filter excludes a cluster that matches none of the required terms.
func (*ClusterAffinity) Filter(_ context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	cp, s := load(state, u)
	if s != nil {
		return s
	}
	if len(cp.required) == 0 {
		return nil
	}
	for _, t := range cp.required {
		if t.matches(c.Labels) {
			return nil
		}
	}
	return &framework.Status{Code: framework.Unschedulable, Reason: reasonRequired}
}

// Score is the matched share of the preferred weights, 0..MaxScore.
func (*ClusterAffinity) Score(_ context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	cp, s := load(state, u)
	if s != nil {
		return 0, s
	}
	if cp.total == 0 {
		return 0, nil
	}
	var sum int64
	for i, t := range cp.preferred {
		if t.matches(c.Labels) {
			sum += cp.weights[i]
		}
	}
	return sum * framework.MaxScore / cp.total, nil
}

func (t term) matches(labels map[string]string) bool {
	for i := range t {
		if !t[i].matches(labels) {
			return false
		}
	}
	return true
}

func (r *requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case opIn:
		return ok && contains(r.values, v)
	case opNotIn:
		return !ok || !contains(r.values, v)
	case opExists:
		return ok
	case opDoesNotExist:
		return !ok
	case opGt:
		n, valid := parseInt(v)
		return ok && valid && n > r.bound
	case opLt:
		n, valid := parseInt(v)
		return ok && valid && n < r.bound
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// parseInt parses a decimal integer, without allocating when s is not one.
func parseInt(s string) (int64, bool) {
	digits := s
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		digits = digits[1:]
	}
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// compile checks and compiles u's cluster affinity, in five allocations
// whatever the number of terms.
func compile(u *framework.Unit) (*compiled, error) {
	if u.Placement == nil || u.Placement.ClusterAffinity == nil {
		return none, nil
	}
	a := u.Placement.ClusterAffinity
	if len(a.RequiredTerms) == 0 && len(a.Preferred) == 0 {
		return none, nil
	}
	n := 0
	for _, t := range a.RequiredTerms {
		n += len(t.MatchExpressions)
	}
	for _, p := range a.Preferred {
		n += len(p.Term.MatchExpressions)
	}
	slab := make([]requirement, n)
	cp := &compiled{
		required:  make([]term, len(a.RequiredTerms)),
		preferred: make([]term, len(a.Preferred)),
		weights:   make([]int64, len(a.Preferred)),
	}
	for i, t := range a.RequiredTerms {
		ct := slab[:len(t.MatchExpressions):len(t.MatchExpressions)]
		slab = slab[len(t.MatchExpressions):]
		if err := compileTerm(ct, t); err != nil {
			return nil, fmt.Errorf("clusterAffinity.requiredTerms[%d].%w", i, err)
		}
		cp.required[i] = ct
	}
	for i, p := range a.Preferred {
		if p.Weight < 1 || p.Weight > 100 {
			return nil, fmt.Errorf("clusterAffinity.preferred[%d].weight: %d is not within 1 to 100", i, p.Weight)
		}
		ct := slab[:len(p.Term.MatchExpressions):len(p.Term.MatchExpressions)]
		slab = slab[len(p.Term.MatchExpressions):]
		if err := compileTerm(ct, p.Term); err != nil {
			return nil, fmt.Errorf("clusterAffinity.preferred[%d].term.%w", i, err)
		}
		cp.preferred[i] = ct
		cp.weights[i] = int64(p.Weight)
		cp.total += int64(p.Weight)
	}
	return cp, nil
}

// compileTerm compiles t into out, which has room for its expressions.
func compileTerm(out term, t v1alpha1.ClusterSelectorTerm) error {
	for i, e := range t.MatchExpressions {
		op, known := operators[e.Operator]
		if !known {
			return fmt.Errorf("matchExpressions[%d]: unknown operator %q", i, e.Operator)
		}
		r := requirement{key: e.Key, op: op}
		var err error
		switch op {
		case opIn, opNotIn:
			if len(e.Values) == 0 {
				err = fmt.Errorf("%s needs values", e.Operator)
			}
			r.values = e.Values
		case opExists, opDoesNotExist:
			if len(e.Values) > 0 {
				err = fmt.Errorf("%s takes no values", e.Operator)
			}
		case opGt, opLt:
			var n int64
			var perr error
			if len(e.Values) == 1 {
				n, perr = strconv.ParseInt(e.Values[0], 10, 64)
			}
			if len(e.Values) != 1 || perr != nil {
				err = fmt.Errorf("%s takes one integer value, got %q", e.Operator, e.Values)
			}
			r.bound = n
		}
		if err != nil {
			return fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
		out[i] = r
	}
	return nil
}
