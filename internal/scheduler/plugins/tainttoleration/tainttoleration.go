// Package tainttoleration is the TaintToleration plugin: MemberCluster
// taints keep objects that do not tolerate them off a cluster (filter) or
// make the cluster less attractive (score).
package tainttoleration

import (
	"context"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Name is the plugin's name in scheduling profiles.
const Name = "TaintToleration"

// stateKey is where Prepare leaves the decision's clock and logger.
const stateKey = Name

// PreferNoSchedulePenalty is what each untolerated PreferNoSchedule taint
// takes off a cluster's score.
const PreferNoSchedulePenalty = 10

// TaintToleration matches a cluster's spec.taints against the placement's
// tolerations with the Kubernetes rules (corev1.Toleration.ToleratesTaint;
// the Lt and Gt operators compare integer values).
//
// Filter: an untolerated NoExecute taint excludes the cluster; an
// untolerated NoSchedule taint excludes it unless the object is already
// placed there (a NoSchedule cluster keeps what it holds). A NoExecute
// taint is tolerated for the shortest tolerationSeconds among the
// tolerations that match it (none set: for ever), counted from the taint's
// timeAdded (unset: from now); once that runs out the cluster is excluded.
// The decision is not requeued by the plugin when a toleration runs out:
// the caller has to schedule again then. The reason is "untolerated taint
// <key>".
//
// Score: MaxScore minus PreferNoSchedulePenalty per untolerated
// PreferNoSchedule taint, not below 0.
type TaintToleration struct {
	now func() time.Time
}

var (
	_ framework.PreparePlugin = (*TaintToleration)(nil)
	_ framework.FilterPlugin  = (*TaintToleration)(nil)
	_ framework.ScorePlugin   = (*TaintToleration)(nil)
)

// New builds the plugin. It takes no arguments.
func New(args []byte) (framework.Plugin, error) {
	if err := framework.NoArgs(args); err != nil {
		return nil, err
	}
	return &TaintToleration{now: time.Now}, nil
}

// Name returns Name.
func (*TaintToleration) Name() string { return Name }

// cycle is what one decision shares: one clock reading, so every cluster
// is judged at the same instant, and the logger ToleratesTaint reports
// unparsable Lt/Gt values to.
type cycle struct {
	now    time.Time
	logger klog.Logger
}

// Prepare reads the clock and the logger once for the decision.
func (p *TaintToleration) Prepare(ctx context.Context, state framework.CycleState, _ *framework.Unit, _ []*v1alpha1.MemberCluster) *framework.Status {
	state[stateKey] = &cycle{now: p.clock(), logger: klog.FromContext(ctx)}
	return nil
}

func (p *TaintToleration) cycle(ctx context.Context, state framework.CycleState) cycle {
	if cy, ok := state[stateKey].(*cycle); ok {
		return *cy
	}
	return cycle{now: p.clock(), logger: klog.FromContext(ctx)}
}

func (p *TaintToleration) clock() time.Time {
	if p.now == nil {
		return time.Now()
	}
	return p.now()
}

// Filter excludes a cluster with an untolerated NoExecute taint, or an
// untolerated NoSchedule taint when the object is not placed there yet.
func (p *TaintToleration) Filter(ctx context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) *framework.Status {
	taints := c.Spec.Taints
	if len(taints) == 0 {
		return nil
	}
	cy := p.cycle(ctx, state)
	tols := tolerations(u)
	for i := range taints {
		t := &taints[i]
		switch t.Effect {
		case corev1.TaintEffectNoExecute:
			if noExecuteTolerated(&cy, tols, t) {
				continue
			}
		case corev1.TaintEffectNoSchedule:
			if tolerated(&cy, tols, t) {
				continue
			}
			if _, placed := u.CurrentReplicas(c.Name); placed {
				continue
			}
		default:
			continue
		}
		return &framework.Status{Code: framework.Unschedulable, Reason: "untolerated taint " + t.Key}
	}
	return nil
}

// Score takes PreferNoSchedulePenalty off MaxScore for every untolerated
// PreferNoSchedule taint.
func (p *TaintToleration) Score(ctx context.Context, state framework.CycleState, u *framework.Unit, c *v1alpha1.MemberCluster) (int64, *framework.Status) {
	taints := c.Spec.Taints
	score := int64(framework.MaxScore)
	if len(taints) == 0 {
		return score, nil
	}
	var cy cycle
	loaded := false
	tols := tolerations(u)
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !loaded {
			cy, loaded = p.cycle(ctx, state), true
		}
		if !tolerated(&cy, tols, t) {
			score -= PreferNoSchedulePenalty
		}
	}
	return max(score, 0), nil
}

func tolerations(u *framework.Unit) []corev1.Toleration {
	if u.Placement == nil {
		return nil
	}
	return u.Placement.Tolerations
}

// tolerated reports whether some toleration matches t.
func tolerated(cy *cycle, tols []corev1.Toleration, t *corev1.Taint) bool {
	for j := range tols {
		if tols[j].ToleratesTaint(cy.logger, t, true) {
			return true
		}
	}
	return false
}

// maxSeconds is the longest tolerationSeconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// noExecuteTolerated reports whether the NoExecute taint t is tolerated at
// cy.now: some toleration matches it, and the shortest tolerationSeconds
// of the matching ones (none set: for ever; zero or less: not at all) has
// not passed since the taint was added (unset: now).
func noExecuteTolerated(cy *cycle, tols []corev1.Toleration, t *corev1.Taint) bool {
	matched, limited := false, false
	var seconds int64
	for j := range tols {
		tol := &tols[j]
		if !tol.ToleratesTaint(cy.logger, t, true) {
			continue
		}
		matched = true
		if s := tol.TolerationSeconds; s != nil && (!limited || *s < seconds) {
			seconds, limited = *s, true
		}
	}
	switch {
	case !matched:
		return false
	case !limited || seconds >= maxSeconds:
		return true
	case seconds <= 0:
		return false
	case t.TimeAdded == nil:
		return true
	}
	return cy.now.Sub(t.TimeAdded.Time) < time.Duration(seconds)*time.Second
}
