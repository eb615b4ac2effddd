package workload

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placeholder reasons for members that have nothing to report.
const (
	// reasonMissing: the member has no copy.
	reasonMissing = "Missing"
	// reasonNoPlacement: no cluster is placed, so no copy runs anywhere.
	reasonNoPlacement = "NoPlacement"
	// reasonNotReported: the copy has no such condition.
	reasonNotReported = "NotReported"
	// reasonOutdated: the copy does not hold the template's current
	// generation yet, or its controller has not observed it yet.
	reasonOutdated = "Outdated"
)

// verdict is a computed condition before its timestamps are set.
type verdict struct {
	Status  string
	Reason  string
	Message string
}

// previous is the template's condition of the same type.
type previous struct {
	verdict
	// transition is the condition's lastTransitionTime.
	transition metav1.Time
	// update is the time the condition last changed in any way
	// (lastUpdateTime of a Deployment, lastProbeTime of a Job).
	update metav1.Time
}

// stamp returns a condition's lastTransitionTime and update time: the
// previous ones when nothing changed, now for both when the status
// changed (or there was no such condition), and the previous transition
// time with now as update time when only reason or message changed.
func stamp(prev *previous, next verdict, now metav1.Time) (transition, update metav1.Time) {
	switch {
	case prev == nil || prev.Status != next.Status || prev.transition.IsZero():
		return now, now
	case prev.verdict != next:
		return prev.transition, now
	}
	return prev.transition, prev.update
}

// clusterReasons lists members as "cluster: reason" entries.
type clusterReasons []string

// add records a member and the reason it is listed.
func (l *clusterReasons) add(cluster, reason string) {
	*l = append(*l, cluster+": "+reason)
}

// String joins the entries, in the order they were added.
func (l clusterReasons) String() string {
	return strings.Join(l, ", ")
}

// reasonOf returns a member condition's reason for listing: its reason,
// else its status, else reasonNotReported.
func reasonOf(status, reason string) string {
	switch {
	case reason != "":
		return reason
	case status != "":
		return status
	}
	return reasonNotReported
}
