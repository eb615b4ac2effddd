package pull

import (
	"fmt"
	"regexp"
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
	// ReasonAgentReported: the agent reports its cluster not ready with a
	// reason a condition cannot carry (see its message).
	ReasonAgentReported = "AgentReported"
	// ReasonNotAccepted: the member's spec.accepted is false, so its
	// agent gets no certificate and the member gets no workloads.
	ReasonNotAccepted = "NotAccepted"
)

// conditionReason is the pattern of a metav1.Condition's reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// maxAgentMessage bounds the part of a condition's message an agent's
// report fills (a condition's message holds at most 32,768 bytes).
const maxAgentMessage = 4096

// heartbeat tracks an agent's Lease by the hub's own clock: what counts is
// when the hub last saw renewTime change, not the agent's timestamps, so a
// skewed clock in the member neither hides a silent agent nor fails a
// live one.
type heartbeat struct {
	renew string    // the last renewTime seen
	seen  time.Time // when the hub saw it change
	// trustFirst: the first renewTime seen counts as a renewal if it is
	// recent by the hub's clock (no health was recorded to keep meanwhile;
	// an old one may be a dead agent's last, and a skewed agent clock only
	// means waiting for the next renewal).
	trustFirst bool
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
		// The first renewTime seen earns no credit: it may be a dead
		// agent's last (the controller-manager restarted, or another
		// replica became leader), and the health recorded earlier stays
		// meanwhile. A live agent renews again within AgentHeartbeat,
		// well inside the damping of a Healthy member.
		if h.renew != "" || (h.trustFirst && now.Sub(lease.Spec.RenewTime.Time) <= stale) {
			h.seen = now
		}
		h.renew = r
	}
	if h.seen.IsZero() {
		o.Health, o.Reason = member.Unreachable, ReasonAgentSilent
		o.Message = fmt.Sprintf("waiting to see the cluster's agent renew its heartbeat (its Lease was last renewed at %s by the agent's clock)", h.renew)
		return o
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
		} else if !conditionReason.MatchString(o.Reason) || len(o.Reason) > 1024 {
			// It goes into the MemberCluster's Ready condition, whose
			// schema would refuse the whole status write.
			o.Reason = ReasonAgentReported
		}
		o.Message = "the cluster's agent reports: " + a[v1alpha1.AnnotationAgentHealthMessage]
		if len(o.Message) > maxAgentMessage {
			o.Message = o.Message[:maxAgentMessage] + "..."
		}
	default:
		o.Health, o.Reason = member.NotReady, ReasonAgentSilent
		o.Message = fmt.Sprintf("the cluster's agent renews its heartbeat but reports no health (annotation %s)", v1alpha1.AnnotationAgentHealth)
	}
	return o
}
