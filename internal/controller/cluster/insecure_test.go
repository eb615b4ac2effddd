package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

func TestRenderInsecure(t *testing.T) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: member.ReasonReady}
	earlier := metav1.Condition{Type: v1alpha1.ConditionInsecureTransport, Status: metav1.ConditionTrue, Reason: reasonInsecureAllowed,
		Message: insecureMessage([]string{"plain http"}), ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(tEarlier)}
	tests := []struct {
		name     string
		before   []metav1.Condition
		insecure []string
		want     *metav1.Condition // the InsecureTransport condition after, nil for none
	}{
		{name: "secure stays without the condition", before: []metav1.Condition{ready}},
		{name: "secure again removes it", before: []metav1.Condition{ready, earlier}},
		{name: "insecure adds it", before: []metav1.Condition{ready}, insecure: []string{"plain http"},
			want: &metav1.Condition{Type: v1alpha1.ConditionInsecureTransport, Status: metav1.ConditionTrue, Reason: reasonInsecureAllowed,
				Message: insecureMessage([]string{"plain http"}), ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(tNow)}},
		{name: "still insecure keeps its transition time", before: []metav1.Condition{ready, earlier}, insecure: []string{"plain http"}, want: &earlier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := v1alpha1.MemberClusterStatus{Conditions: append([]metav1.Condition(nil), tt.before...)}
			renderInsecure(&st, tt.insecure, 3, tNow)
			got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionInsecureTransport)
			switch {
			case tt.want == nil && got != nil:
				t.Fatalf("InsecureTransport = %+v, want none", got)
			case tt.want != nil && (got == nil || !equality.Semantic.DeepEqual(*got, *tt.want)):
				t.Fatalf("InsecureTransport = %+v, want %+v", got, tt.want)
			}
			if r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				t.Errorf("Ready condition changed: %+v", r)
			}
		})
	}
	if msg := insecureMessage([]string{"a", "b"}); !strings.Contains(msg, "INSECURE: a; b") || !strings.Contains(msg, "--allow-insecure-members") {
		t.Errorf("insecureMessage() = %q, want the problems and the flag", msg)
	}
}

// TestRefusalsAreNotProbed checks how refusals show: Ready False with the
// reason; a claim refusal comes from a member that answered (Offline
// False), a refused Secret or endpoint from one never contacted (Offline
// Unknown).
func TestRefusalsAreNotProbed(t *testing.T) {
	tests := []struct {
		reason  string
		offline metav1.ConditionStatus
	}{
		{member.ReasonCredentialsNotBound, metav1.ConditionUnknown},
		{member.ReasonInsecureEndpoint, metav1.ConditionUnknown},
		{member.ReasonClaimedElsewhere, metav1.ConditionFalse},
		{member.ReasonClaimFailed, metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			conds := conditionsFor(member.Observation{Health: member.NotReady, Reason: tt.reason, Message: "m", At: time.Now()}, 1)
			if conds[0].Status != metav1.ConditionFalse || conds[0].Reason != tt.reason {
				t.Errorf("Ready = %+v, want False with reason %s", conds[0], tt.reason)
			}
			if conds[1].Status != tt.offline {
				t.Errorf("Offline = %+v, want %s", conds[1], tt.offline)
			}
		})
	}
}
