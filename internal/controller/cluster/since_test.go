package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestNotReadySince checks that eviction messages count from when the
// member stopped being Ready, also after its grace period was restarted
// (which moves the taint's TimeAdded forward).
func TestNotReadySince(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	taint := func(d time.Duration) []corev1.Taint {
		return []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: at(d)}}
	}
	ready := func(status metav1.ConditionStatus, d time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, LastTransitionTime: *at(d)}}
	}
	for _, tc := range []struct {
		name   string
		conds  []metav1.Condition
		taints []corev1.Taint
		want   time.Duration // before now
	}{
		{"no condition: the taint", nil, taint(40 * time.Second), 40 * time.Second},
		{"restarted grace period: the condition", ready(metav1.ConditionFalse, 2*time.Minute), taint(30 * time.Second), 2 * time.Minute},
		{"unknown counts as not Ready", ready(metav1.ConditionUnknown, 90*time.Second), taint(30 * time.Second), 90 * time.Second},
		{"a Ready condition is not a start", ready(metav1.ConditionTrue, 5*time.Minute), taint(30 * time.Second), 30 * time.Second},
		{"a later condition than the taint: the taint", ready(metav1.ConditionFalse, 10*time.Second), taint(30 * time.Second), 30 * time.Second},
		{"neither: now", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := notReadySince(tc.conds, tc.taints, now); !got.Equal(now.Add(-tc.want)) {
				t.Errorf("got %s before now, want %s", now.Sub(got), tc.want)
			}
		})
	}
}
