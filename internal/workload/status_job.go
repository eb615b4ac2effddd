package workload

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Job condition reasons of the host Job.
const (
	// reasonMemberFailed is the host's failure reason when the failing
	// member gives none.
	reasonMemberFailed = "MemberFailed"
	// reasonCompletionsReached is the Job controller's reason for a Job
	// whose pods all succeeded.
	reasonCompletionsReached = "CompletionsReached"
)

// jobStatus sums the members' pod counts and finishes the host Job when
// the members have finished. It keeps to the Job status rules the
// apiserver enforces on every status write:
//   - a finished Job (Complete or Failed) stays as it is: terminal
//     conditions and completionTime cannot change, so its status is final;
//   - Failed needs FailureTarget and Complete needs SuccessCriteriaMet, so
//     each comes with its interim condition;
//   - a Job with active or terminating pods is not finished: while other
//     members still run pods, a member's failure shows as FailureTarget
//     only, and Failed follows when no pod runs anywhere (every member's
//     copy known, none with active or terminating pods);
//   - succeeded and failed never decrease, and a set startTime stays
//     unless the Job is suspended.
//
// The Job is Complete when every member's copy is Complete (not with no
// members) and, with completions, the members' successes reach the
// host's (a divided Job whose member is gone stays incomplete);
// completionTime is then the latest member's, and the message says what
// each cluster ran. succeeded never exceeds the host's completions
// (Duplicate: each member runs them all).
func jobStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any) {
	prev, old := templateStatus[batchv1.JobStatus](template)
	if prev != nil && (jobConditionTrue(old.Conditions, batchv1.JobComplete) || jobConditionTrue(old.Conditions, batchv1.JobFailed)) {
		return prev, prev
	}
	ms := decodeMembers[batchv1.JobStatus](members)
	var sum batchv1.JobStatus
	var failing clusterReasons
	failReason := ""
	complete := len(ms) > 0
	allKnown := true // every member's copy read: none may be running pods unseen
	var earliest, latest *metav1.Time
	for _, m := range ms {
		if !m.valid {
			complete, allKnown = false, false
			continue
		}
		s := m.status
		sum.Active = addInt32(sum.Active, s.Active)
		sum.Succeeded = addInt32(sum.Succeeded, s.Succeeded)
		sum.Failed = addInt32(sum.Failed, s.Failed)
		sum.Ready = addCount(sum.Ready, s.Ready)
		sum.Terminating = addCount(sum.Terminating, s.Terminating)
		if s.StartTime != nil && (earliest == nil || s.StartTime.Before(earliest)) {
			earliest = s.StartTime
		}
		if c := failure(s.Conditions); c != nil {
			failing.add(m.Cluster, reasonOf(string(c.Status), c.Reason))
			if failReason == "" {
				failReason = c.Reason
			}
		}
		if !jobConditionTrue(s.Conditions, batchv1.JobComplete) {
			complete = false
		} else if s.CompletionTime != nil && (latest == nil || latest.Before(s.CompletionTime)) {
			latest = s.CompletionTime
		}
	}
	var perCluster []string
	for _, m := range ms {
		if m.valid {
			perCluster = append(perCluster, fmt.Sprintf("%s %d", m.Cluster, m.status.Succeeded))
		}
	}
	// Members that each ran every completion (Duplicate) do not make the
	// host's Job succeed more often than it asks.
	completions, hasCompletions := jobCompletions(template)
	if hasCompletions {
		sum.Succeeded = min(sum.Succeeded, completions)
	}
	sum.Succeeded = max(sum.Succeeded, old.Succeeded)
	sum.Failed = max(sum.Failed, old.Failed)
	sum.StartTime = earliest
	if old.StartTime != nil && !jobSuspended(template) {
		sum.StartTime = old.StartTime
	}

	// A member whose copy is not known (its cluster is unreachable, or the
	// copy is not written yet) may still run pods: Failed, which is final,
	// waits for it.
	idle := allKnown && sum.Active == 0 && (sum.Terminating == nil || *sum.Terminating == 0)
	failed := verdict{Status: string(corev1.ConditionTrue), Reason: failReason, Message: failing.String()}
	if failed.Reason == "" {
		failed.Reason = reasonMemberFailed
	}
	isFailing := len(failing) > 0
	if c := findJobCondition(old.Conditions, batchv1.JobFailureTarget); !isFailing && c != nil && c.Status == corev1.ConditionTrue {
		// FailureTarget cannot be withdrawn; the members no longer say why.
		failed = verdict{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		isFailing = true
	}
	switch {
	case isFailing:
		sum.Conditions = append(sum.Conditions, stampJobCondition(batchv1.JobFailureTarget, failed, old.Conditions, now))
		if idle {
			sum.Conditions = append(sum.Conditions, stampJobCondition(batchv1.JobFailed, failed, old.Conditions, now))
			if sum.StartTime == nil {
				sum.StartTime = &now
			}
		}
	case complete && idle && (!hasCompletions || sum.Succeeded >= completions):
		done := verdict{Status: string(corev1.ConditionTrue), Reason: reasonCompletionsReached,
			Message: "Job completed in every cluster (succeeded: " + strings.Join(perCluster, ", ") + ")."}
		sum.Conditions = []batchv1.JobCondition{
			stampJobCondition(batchv1.JobSuccessCriteriaMet, done, old.Conditions, now),
			stampJobCondition(batchv1.JobComplete, done, old.Conditions, now),
		}
		if sum.StartTime == nil {
			sum.StartTime = &now
		}
		sum.CompletionTime = latest
		if latest == nil || latest.Before(sum.StartTime) {
			sum.CompletionTime = sum.StartTime
		}
	}
	return prev, &sum
}

// failure returns a member's Failed=True condition, else its
// FailureTarget=True condition (the Job controller's interim condition
// before Failed), else nil.
func failure(conds []batchv1.JobCondition) *batchv1.JobCondition {
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobFailureTarget} {
		if c := findJobCondition(conds, t); c != nil && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// jobSuspended reports whether the template's spec.suspend is true.
func jobSuspended(template *unstructured.Unstructured) bool {
	suspended, _, _ := unstructured.NestedBool(template.Object, "spec", "suspend")
	return suspended
}

// findJobCondition returns the condition of type t, or nil.
func findJobCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// jobConditionTrue reports whether conds has a condition of type t with
// status True.
func jobConditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	c := findJobCondition(conds, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// stampJobCondition builds a condition of type t from v, with the
// timestamps of the template's condition old when v did not change it.
func stampJobCondition(t batchv1.JobConditionType, v verdict, old []batchv1.JobCondition, now metav1.Time) batchv1.JobCondition {
	var prev *previous
	if c := findJobCondition(old, t); c != nil {
		prev = &previous{
			verdict:    verdict{Status: string(c.Status), Reason: c.Reason, Message: c.Message},
			transition: c.LastTransitionTime,
			update:     c.LastProbeTime,
		}
	}
	transition, probe := stamp(prev, v, now)
	return batchv1.JobCondition{
		Type:               t,
		Status:             corev1.ConditionStatus(v.Status),
		Reason:             v.Reason,
		Message:            v.Message,
		LastTransitionTime: transition,
		LastProbeTime:      probe,
	}
}
