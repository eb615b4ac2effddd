package pull

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

func lease(renew time.Time, health member.Health) *coordinationv1.Lease {
	l := &coordinationv1.Lease{}
	l.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	if health != "" {
		l.Annotations = map[string]string{
			v1alpha1.AnnotationAgentHealth:        string(health),
			v1alpha1.AnnotationAgentHealthReason:  "APIServerNotReady",
			v1alpha1.AnnotationAgentHealthMessage: "readyz says no",
		}
	}
	return l
}

func withReason(l *coordinationv1.Lease, reason string) *coordinationv1.Lease {
	l.Annotations[v1alpha1.AnnotationAgentHealthReason] = reason
	return l
}

func TestHeartbeatObserve(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	skewed := t0.Add(-time.Hour) // the member's clock is an hour behind
	tests := []struct {
		name    string
		trust   bool                    // heartbeat.trustFirst
		steps   []*coordinationv1.Lease // one observation per step, 5 s apart
		health  member.Health
		reason  string
		message string
	}{
		{name: "no lease", steps: []*coordinationv1.Lease{nil}, health: member.Unreachable, reason: ReasonAgentSilent, message: "has not reported"},
		{name: "first sight earns no credit (a dead agent's last renewal)", steps: []*coordinationv1.Lease{lease(t0, member.Healthy)}, health: member.Unreachable, reason: ReasonAgentSilent, message: "waiting to see the cluster's agent renew"},
		{name: "never renewed since first seen", steps: []*coordinationv1.Lease{lease(t0, member.Healthy), lease(t0, member.Healthy), lease(t0, member.Healthy), lease(t0, member.Healthy)}, health: member.Unreachable, reason: ReasonAgentSilent, message: "waiting to see"},
		{name: "a new member: the first renewal counts", trust: true, steps: []*coordinationv1.Lease{lease(t0, member.Healthy)}, health: member.Healthy, reason: ReasonAgentReady},
		{name: "a new member: an old first renewal does not (a dead agent's Lease)", trust: true, steps: []*coordinationv1.Lease{lease(t0.Add(-time.Hour), member.Healthy)}, health: member.Unreachable, reason: ReasonAgentSilent, message: "waiting to see"},
		{name: "renewed and healthy", steps: []*coordinationv1.Lease{lease(t0, member.Healthy), lease(t0.Add(4*time.Second), member.Healthy)}, health: member.Healthy, reason: ReasonAgentReady},
		{name: "renewed each step, skewed clock", steps: []*coordinationv1.Lease{lease(skewed, member.Healthy), lease(skewed.Add(4*time.Second), member.Healthy), lease(skewed.Add(8*time.Second), member.Healthy), lease(skewed.Add(12*time.Second), member.Healthy)}, health: member.Healthy, reason: ReasonAgentReady},
		{name: "renewal stops", steps: []*coordinationv1.Lease{lease(t0, member.Healthy), lease(t0.Add(4*time.Second), member.Healthy), lease(t0.Add(4*time.Second), member.Healthy), lease(t0.Add(4*time.Second), member.Healthy), lease(t0.Add(4*time.Second), member.Healthy)}, health: member.Unreachable, reason: ReasonAgentSilent, message: "no heartbeat from the cluster's agent for 15s"},
		{name: "member apiserver not ready", steps: []*coordinationv1.Lease{lease(t0, member.NotReady), lease(t0.Add(4*time.Second), member.NotReady)}, health: member.NotReady, reason: "APIServerNotReady", message: "the cluster's agent reports: readyz says no"},
		{name: "a reason no condition can carry", steps: []*coordinationv1.Lease{withReason(lease(t0, member.NotReady), "connection refused"), withReason(lease(t0.Add(4*time.Second), member.NotReady), "connection refused")}, health: member.NotReady, reason: ReasonAgentReported, message: "readyz says no"},
		{name: "no health annotation", steps: []*coordinationv1.Lease{lease(t0, ""), lease(t0.Add(4*time.Second), "")}, health: member.NotReady, reason: ReasonAgentSilent, message: "reports no health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := heartbeat{trustFirst: tt.trust}
			var o member.Observation
			for i, l := range tt.steps {
				o = h.observe(l, t0.Add(time.Duration(i)*5*time.Second), HeartbeatStale)
			}
			if o.Health != tt.health || o.Reason != tt.reason || !strings.Contains(o.Message, tt.message) {
				t.Errorf("observe = %s %s %q, want %s %s containing %q", o.Health, o.Reason, o.Message, tt.health, tt.reason, tt.message)
			}
		})
	}
}
