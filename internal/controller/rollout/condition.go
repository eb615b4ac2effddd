package rollout

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Reasons of the RolledOut condition.
const (
	// ReasonRolledOut: every cluster runs the revision.
	ReasonRolledOut = "RolledOut"
	// ReasonProgressing: clusters are rolling or waiting for budget.
	ReasonProgressing = "Progressing"
	// ReasonPaused: the host object is paused; nobody is admitted.
	ReasonPaused = "Paused"
	// ReasonStalled: a cluster stalled (unusable while rolling) or its
	// copy exceeded its progress deadline.
	ReasonStalled = "Stalled"
)

// condition renders the RolledOut condition of a plan: who is rolling
// with what share, who waits, who stalled.
func condition(plan *v1alpha1.RolloutStatus, paused bool, stuck []string) metav1.Condition {
	var rolling, waiting, stalled []string
	done := 0
	for _, c := range plan.Clusters {
		switch c.State {
		case v1alpha1.RolloutDone:
			done++
		case v1alpha1.RolloutRolling:
			if c.MaxSurge+c.MaxUnavailable > 0 {
				rolling = append(rolling, fmt.Sprintf("%s (surge %d, unavailable %d)", c.Cluster, c.MaxSurge, c.MaxUnavailable))
			} else {
				rolling = append(rolling, c.Cluster)
			}
		case v1alpha1.RolloutWaiting:
			waiting = append(waiting, c.Cluster)
		case v1alpha1.RolloutStalled:
			stalled = append(stalled, c.Cluster+" (not Ready while rolling; its share went to the others)")
		}
	}
	for _, c := range stuck {
		stalled = append(stalled, c+" (progress deadline exceeded)")
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionRolledOut, Status: metav1.ConditionFalse, ObservedGeneration: 0}
	if done == len(plan.Clusters) && len(stuck) == 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonRolledOut
		cond.Message = fmt.Sprintf("revision %s runs in all %d clusters", plan.Revision, done)
		return cond
	}
	parts := []string{fmt.Sprintf("revision %s in %d/%d clusters; budget surge %d, unavailable %d", plan.Revision, done, len(plan.Clusters), plan.MaxSurge, plan.MaxUnavailable)}
	if len(rolling) > 0 {
		parts = append(parts, "rolling: "+strings.Join(rolling, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "waiting: "+strings.Join(waiting, ", "))
	}
	if len(stalled) > 0 {
		parts = append(parts, "stalled: "+strings.Join(stalled, ", "))
	}
	switch {
	case len(stalled) > 0:
		cond.Reason = ReasonStalled
	case paused:
		cond.Reason = ReasonPaused
		parts = append(parts, "the host object is paused (kubectl rollout resume)")
	default:
		cond.Reason = ReasonProgressing
	}
	cond.Message = strings.Join(parts, "; ")
	return cond
}
