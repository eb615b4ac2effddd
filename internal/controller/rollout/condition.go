package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
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
	// ReasonHalted: a staged rollout stopped admitting clusters (Halted
	// says why) until flotilla rollout resume or a new revision.
	ReasonHalted = "Halted"
	// ReasonAwaitingApproval: a stage is done and its gate waits for
	// flotilla rollout approve.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonStagePaused: a stage is done and its gate waits for its
	// pauseSeconds.
	ReasonStagePaused = "StagePaused"
	// ReasonInvalidStages: the policy's stages cannot be resolved.
	ReasonInvalidStages = "InvalidStages"
	// ReasonSuspended: the object's federation is suspended.
	ReasonSuspended = "Suspended"
)

// condition renders the RolledOut condition of a plan: who is rolling
// with what share, who waits, who stalled, and where a staged rollout
// stands.
func condition(plan *v1alpha1.RolloutStatus, paused bool, members []rollout.Member) metav1.Condition {
	var rolling, waiting, stalled []string
	done, shares := 0, 0
	for _, c := range plan.Clusters {
		switch c.State {
		case v1alpha1.RolloutDone:
			done++
		case v1alpha1.RolloutRolling:
			if c.MaxSurge+c.MaxUnavailable > 0 {
				rolling = append(rolling, fmt.Sprintf("%s (surge %d, unavailable %d)", c.Cluster, c.MaxSurge, c.MaxUnavailable))
				shares++
			} else {
				rolling = append(rolling, c.Cluster)
			}
		case v1alpha1.RolloutWaiting:
			waiting = append(waiting, c.Cluster)
		case v1alpha1.RolloutStalled:
			stalled = append(stalled, c.Cluster+" (not Ready while rolling; its share went to the others)")
		}
	}
	for _, m := range members {
		if m.Stuck {
			stalled = append(stalled, m.Cluster+" (progress deadline exceeded)")
		}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionRolledOut, Status: metav1.ConditionFalse}
	if done == len(plan.Clusters) && len(stalled) == 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonRolledOut
		cond.Message = fmt.Sprintf("revision %s runs in all %d clusters", plan.Revision, done)
		return cond
	}
	parts := []string{fmt.Sprintf("revision %s in %d/%d clusters; budget surge %d, unavailable %d", plan.Revision, done, len(plan.Clusters), plan.MaxSurge, plan.MaxUnavailable)}
	if plan.Stage != "" {
		parts = append(parts, "stage "+plan.Stage)
	}
	if len(rolling) > 0 {
		parts = append(parts, "rolling: "+strings.Join(rolling, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "waiting: "+strings.Join(waiting, ", "))
		if shares == 0 && plan.Gate == "" && plan.Halted == "" && !paused {
			if using := budgetUsers(members); using != "" {
				parts = append(parts, "no budget left to admit them: "+using)
			}
		}
	}
	if len(stalled) > 0 {
		parts = append(parts, "stalled: "+strings.Join(stalled, ", "))
	}
	switch {
	case plan.Halted != "":
		cond.Reason = ReasonHalted
		parts = append(parts, "halted: "+plan.Halted+" (flotilla rollout resume to go on, flotilla rollout abort to go back)")
	case plan.Gate == v1alpha1.GateApproval:
		cond.Reason = ReasonAwaitingApproval
		parts = append(parts, fmt.Sprintf("stage %s is done; waiting for approval (flotilla rollout approve)", plan.Stage))
	case plan.Gate == v1alpha1.GatePause:
		cond.Reason = ReasonStagePaused
		parts = append(parts, fmt.Sprintf("stage %s is done; the next starts at %s (flotilla rollout resume to start it now)", plan.Stage, plan.PausedUntil.UTC().Format(time.RFC3339)))
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

// budgetUsers names the copies whose unavailable replicas or extra pods
// use up the budget when nobody can be admitted (a Pending pod with
// maxSurge 0, say), so that a rollout waiting for them says so.
func budgetUsers(members []rollout.Member) string {
	var out []string
	for _, m := range members {
		unavailable, surplus := rollout.Using(m)
		switch {
		case unavailable > 0 && surplus > 0:
			out = append(out, fmt.Sprintf("%s (%d unavailable, %d above its replicas)", m.Cluster, unavailable, surplus))
		case unavailable > 0:
			out = append(out, fmt.Sprintf("%s (%d unavailable)", m.Cluster, unavailable))
		case surplus > 0:
			out = append(out, fmt.Sprintf("%s (%d above its replicas)", m.Cluster, surplus))
		}
	}
	return strings.Join(out, ", ")
}
