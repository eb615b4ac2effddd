package pull

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

// Reasons of a pull member's health.
const (
	// ReasonAgentSilent: the agent's heartbeat stopped (or never started).
	ReasonAgentSilent = "AgentSilent"
	// ReasonAgentReady: the agent reports its apiserver ready.
	ReasonAgentReady = "ClusterReady"
	// ReasonNotAccepted: the member's spec.accepted is false, so its
	// agent gets no certificate and the member gets no workloads.
	ReasonNotAccepted = "NotAccepted"
)

// heartbeat tracks an agent's Lease by the hub's own clock: what counts is
// when the hub last saw renewTime change, not the agent's timestamps, so a
// skewed clock in the member neither hides a silent agent nor fails a
// live one.
type heartbeat struct {
	renew string    // the last renewTime seen
	seen  time.Time // when the hub saw it change
}

// observe returns the health an agent's Lease (nil: none) shows at now:
// Unreachable once the renewal is older than stale, otherwise the
// member's health as the agent reports it in the Lease's annotations.
func (h *heartbeat) observe(lease *coordinationv1.Lease, now time.Time, stale time.Duration) member.Observation {
	o := member.Observation{At: now}
	if lease == nil || lease.Spec.RenewTime == nil {
		o.Health, o.Reason = member.Unreachable, ReasonAgentSilent
		o.Message = "the cluster's agent has not reported: no heartbeat Lease " + v1alpha1.AgentLeaseName + " yet (is `flotilla agent` running in the cluster, with a credential from `flotilla join NAME --mode pull`?)"
		return o
	}
	if r := lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano); r != h.renew {
		h.renew, h.seen = r, now
	}
	if age := now.Sub(h.seen); age > stale {
		o.Health, o.Reason = member.Unreachable, ReasonAgentSilent
		o.Message = fmt.Sprintf("no heartbeat from the cluster's agent for %s (its Lease was last renewed at %s)", age.Round(time.Second), h.renew)
		return o
	}
	a := lease.Annotations
	switch member.Health(a[v1alpha1.AnnotationAgentHealth]) {
	case member.Healthy:
		o.Health, o.Reason, o.Message = member.Healthy, ReasonAgentReady, "the cluster's agent reports its apiserver ready"
	case member.NotReady, member.Unreachable:
		o.Health = member.Health(a[v1alpha1.AnnotationAgentHealth])
		o.Reason = a[v1alpha1.AnnotationAgentHealthReason]
		if o.Reason == "" {
			o.Reason = ReasonAgentSilent
		}
		o.Message = "the cluster's agent reports: " + a[v1alpha1.AnnotationAgentHealthMessage]
	default:
		o.Health, o.Reason = member.NotReady, ReasonAgentSilent
		o.Message = fmt.Sprintf("the cluster's agent renews its heartbeat but reports no health (annotation %s)", v1alpha1.AnnotationAgentHealth)
	}
	return o
}
