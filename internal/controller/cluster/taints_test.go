package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
)

func TestRenderTaints(t *testing.T) {
	earlier := metav1.NewTime(tEarlier)
	now := metav1.NewTime(tNow)
	operator := corev1.Taint{Key: "example.com/dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	operator2 := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}
	unreachable := func(at *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: at}
	}
	unreachableNoExecute := func(at *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: at}
	}
	notReady := func(at *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoSchedule, TimeAdded: at}
	}
	notReadyNoExecute := func(at *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: at}
	}
	tests := []struct {
		name     string
		current  []corev1.Taint
		snap     member.Snapshot
		plan     evictionPlan
		want     []corev1.Taint
		wantNext time.Duration
	}{
		{
			name:    "unknown health keeps managed taints",
			current: []corev1.Taint{operator, unreachable(&earlier)},
			snap:    member.Snapshot{},
			want:    []corev1.Taint{operator, unreachable(&earlier)},
		},
		{
			name: "healthy without taints",
			snap: known(obsHealthy),
			want: nil,
		},
		{
			name:    "healthy keeps operator taints in order",
			current: []corev1.Taint{operator2, operator},
			snap:    known(obsHealthy),
			want:    []corev1.Taint{operator2, operator},
		},
		{
			name:    "healthy removes managed taints",
			current: []corev1.Taint{unreachable(&earlier), operator, notReady(&earlier)},
			snap:    known(obsHealthy),
			want:    []corev1.Taint{operator},
		},
		{
			name:    "unreachable adds its taint after the operator's",
			current: []corev1.Taint{operator},
			snap:    known(obsUnreachable),
			want:    []corev1.Taint{operator, unreachable(&now)},
		},
		{
			name:    "unreachable keeps the TimeAdded of its existing taint",
			current: []corev1.Taint{unreachable(&earlier), operator},
			snap:    known(obsUnreachable),
			want:    []corev1.Taint{unreachable(&earlier), operator},
		},
		{
			name:    "unreachable replaces not-ready, keeping its start",
			current: []corev1.Taint{operator, notReady(&earlier)},
			snap:    known(obsUnreachable),
			want:    []corev1.Taint{operator, unreachable(&earlier)},
		},
		{
			name:    "not ready adds its taint",
			current: nil,
			snap:    known(obsUnauthorized),
			want:    []corev1.Taint{notReady(&now)},
		},
		{
			name:    "not ready for a non-probe reason adds its taint too",
			current: []corev1.Taint{operator},
			snap:    known(obsNoSecret),
			want:    []corev1.Taint{operator, notReady(&now)},
		},
		{
			name:    "not ready replaces unreachable, keeping its start",
			current: []corev1.Taint{unreachable(&earlier)},
			snap:    known(obsNotReady),
			want:    []corev1.Taint{notReady(&earlier)},
		},
		{
			name:    "an evicted member that turns not ready stays evicted, from the same start",
			current: []corev1.Taint{unreachable(&earlier), operator2, unreachableNoExecute(&earlier)},
			snap:    known(obsNotReady),
			plan:    evictionPlan{allowed: false, grace: time.Second},
			want:    []corev1.Taint{notReady(&earlier), operator2, notReadyNoExecute(&earlier)},
		},
		{
			name:     "a change of state within the grace period: NoExecute still due from the first start",
			current:  []corev1.Taint{unreachable(&earlier)},
			snap:     known(obsNotReady),
			plan:     evictionPlan{allowed: true, grace: tNow.Sub(tEarlier) + 10*time.Second},
			want:     []corev1.Taint{notReady(&earlier)},
			wantNext: 10 * time.Second,
		},
		{
			name:    "both keys at once collapse to the current one with the earliest start",
			current: []corev1.Taint{unreachable(&now), notReady(&earlier)},
			snap:    known(obsNotReady),
			want:    []corev1.Taint{notReady(&earlier)},
		},
		{
			name:    "duplicates of the managed taint collapse to the first",
			current: []corev1.Taint{unreachable(&earlier), operator, unreachable(&now), unreachable(nil)},
			snap:    known(obsUnreachable),
			want:    []corev1.Taint{unreachable(&earlier), operator},
		},
		{
			name:    "a NoExecute taint stays while the member is not Ready, and NoSchedule is added",
			current: []corev1.Taint{unreachableNoExecute(&earlier)},
			snap:    known(obsUnreachable),
			want:    []corev1.Taint{unreachableNoExecute(&earlier), unreachable(&now)},
		},
		{
			name:     "grace period over: NoExecute is added",
			current:  []corev1.Taint{operator, unreachable(&earlier)},
			snap:     known(obsUnreachable),
			plan:     evictionPlan{allowed: true, grace: time.Minute},
			want:     []corev1.Taint{operator, unreachable(&earlier), unreachableNoExecute(&now)},
			wantNext: 0,
		},
		{
			name:     "within the grace period: NoExecute is due later",
			current:  []corev1.Taint{unreachable(&earlier)},
			snap:     known(obsUnreachable),
			plan:     evictionPlan{allowed: true, grace: tNow.Sub(tEarlier) + 10*time.Second},
			want:     []corev1.Taint{unreachable(&earlier)},
			wantNext: 10 * time.Second,
		},
		{
			name:     "newly unreachable: NoSchedule now, NoExecute after the grace period",
			snap:     known(obsUnreachable),
			plan:     evictionPlan{allowed: true, grace: 30 * time.Second},
			want:     []corev1.Taint{unreachable(&now)},
			wantNext: 30 * time.Second,
		},
		{
			name:    "grace counted from the first managed taint across a change of state",
			current: []corev1.Taint{notReady(&earlier)},
			snap:    known(obsUnreachable),
			plan:    evictionPlan{allowed: true, grace: time.Minute},
			want:    []corev1.Taint{unreachable(&earlier), unreachableNoExecute(&now)},
		},
		{
			name:    "eviction not allowed (disruption): no NoExecute however long",
			current: []corev1.Taint{unreachable(&earlier)},
			snap:    known(obsUnreachable),
			plan:    evictionPlan{allowed: false, grace: time.Second},
			want:    []corev1.Taint{unreachable(&earlier)},
		},
		{
			name:    "healthy again removes NoExecute too",
			current: []corev1.Taint{unreachable(&earlier), unreachableNoExecute(&earlier), operator2},
			snap:    known(obsHealthy),
			plan:    evictionPlan{allowed: true, grace: time.Second},
			want:    []corev1.Taint{operator2},
		},
		{
			name:    "unknown health keeps NoExecute",
			current: []corev1.Taint{unreachableNoExecute(&earlier)},
			snap:    member.Snapshot{},
			plan:    evictionPlan{allowed: true, grace: time.Second},
			want:    []corev1.Taint{unreachableNoExecute(&earlier)},
		},
		{
			name:    "duplicate operator taints are the operator's business",
			current: []corev1.Taint{operator, operator},
			snap:    known(obsHealthy),
			want:    []corev1.Taint{operator, operator},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]corev1.Taint, len(tt.current))
			for i := range tt.current {
				tt.current[i].DeepCopyInto(&before[i])
			}
			got, next := renderTaints(tt.current, viewOf(tt.snap), tt.plan, tNow)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("renderTaints() mismatch (-want +got):\n%s", diff(tt.want, got))
			}
			if next != tt.wantNext {
				t.Errorf("renderTaints() next = %s, want %s", next, tt.wantNext)
			}
			if !equality.Semantic.DeepEqual(tt.current, before) {
				t.Errorf("renderTaints() modified its input (-before +after):\n%s", diff(before, tt.current))
			}
		})
	}
}

func TestInitialHealth(t *testing.T) {
	ltt := metav1.NewTime(tEarlier)
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt}
	}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  *member.Observation
	}{
		{name: "no conditions", conds: nil, want: nil},
		{
			name:  "only Offline",
			conds: []metav1.Condition{cond(v1alpha1.ConditionOffline, metav1.ConditionTrue, member.ReasonUnreachable, "x")},
			want:  nil,
		},
		{
			name:  "Ready True",
			conds: []metav1.Condition{cond(v1alpha1.ConditionOffline, metav1.ConditionFalse, reasonReachable, reachableMsg), cond(v1alpha1.ConditionReady, metav1.ConditionTrue, member.ReasonReady, "ready")},
			want:  &member.Observation{Health: member.Healthy, Reason: member.ReasonReady, Message: "ready", At: tEarlier},
		},
		{
			name:  "Ready Unknown is unreachable",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionUnknown, member.ReasonUnreachable, "refused")},
			want:  &member.Observation{Health: member.Unreachable, Reason: member.ReasonUnreachable, Message: "refused", At: tEarlier},
		},
		{
			name:  "Ready False Unauthorized",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonUnauthorized, "401")},
			want:  &member.Observation{Health: member.NotReady, Reason: member.ReasonUnauthorized, Message: "401", At: tEarlier},
		},
		{
			name:  "Ready False Forbidden",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonForbidden, "403")},
			want:  &member.Observation{Health: member.NotReady, Reason: member.ReasonForbidden, Message: "403", At: tEarlier},
		},
		{
			name:  "Ready False APIServerNotReady",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonAPIServerNotReady, "500")},
			want:  &member.Observation{Health: member.NotReady, Reason: member.ReasonAPIServerNotReady, Message: "500", At: tEarlier},
		},
		{
			name:  "SecretNotFound is not a probe result",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonSecretNotFound, "missing")},
			want:  nil,
		},
		{
			name:  "InvalidCredentials is not a probe result",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonInvalidCredentials, "bad")},
			want:  nil,
		},
		{
			name:  "SyncModeUnsupported is not a probe result",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, member.ReasonSyncModeUnsupported, "pull")},
			want:  nil,
		},
		{
			name:  "unknown reason",
			conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionTrue, "SomethingElse", "")},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := mcWith(1, v1alpha1.MemberClusterStatus{Conditions: tt.conds})
			got := initialHealth(mc)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("initialHealth() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

// TestInitialHealthRoundTrip checks that every probe outcome, rendered into
// conditions, maps back to itself.
func TestInitialHealthRoundTrip(t *testing.T) {
	for _, o := range []member.Observation{obsHealthy, obsUnreachable, obsUnauthorized, obsForbidden, obsNotReady} {
		t.Run(o.Reason, func(t *testing.T) {
			mc := mcWith(1, v1alpha1.MemberClusterStatus{})
			mc.Status = renderStatus(mc, known(o), tEarlier)
			got := initialHealth(mc)
			if got == nil {
				t.Fatalf("initialHealth() = nil, want %+v", o)
			}
			if got.Health != o.Health || got.Reason != o.Reason || got.Message != o.Message || !got.At.Equal(tEarlier) {
				t.Errorf("initialHealth() = %+v, want %s/%s %q at %v", *got, o.Health, o.Reason, o.Message, tEarlier)
			}
		})
	}
}

func TestSchedulingState(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Effect: effect}
	}
	tests := []struct {
		taints []corev1.Taint
		want   string
	}{
		{nil, "Schedulable"},
		{[]corev1.Taint{taint("example.com/x", corev1.TaintEffectPreferNoSchedule)}, "Schedulable"},
		{[]corev1.Taint{taint("example.com/x", corev1.TaintEffectNoSchedule)}, "Tainted"},
		{[]corev1.Taint{taint(v1alpha1.TaintUnschedulable, corev1.TaintEffectNoSchedule)}, "Cordoned"},
		{[]corev1.Taint{taint(v1alpha1.TaintUnschedulable, corev1.TaintEffectNoSchedule), taint(v1alpha1.TaintDraining, corev1.TaintEffectNoExecute)}, "Draining"},
		{[]corev1.Taint{taint(v1alpha1.TaintUnschedulable, corev1.TaintEffectNoSchedule), taint(v1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule)}, "NotReady"},
		{[]corev1.Taint{taint(v1alpha1.TaintDraining, corev1.TaintEffectNoExecute), taint(v1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute)}, "Evicting"},
	}
	for _, tt := range tests {
		if got := schedulingState(tt.taints); got != tt.want {
			t.Errorf("schedulingState(%v) = %q, want %q", tt.taints, got, tt.want)
		}
	}
}

// TestInitialPullHealth: a pull member's recorded heartbeat state seeds
// its session (whatever reason its agent gave), but not the state of a
// member no session ran for: a member just accepted turns Ready on its
// agent's first renewal.
func TestInitialPullHealth(t *testing.T) {
	ltt := metav1.NewTime(tEarlier)
	for _, tt := range []struct {
		reason string
		status metav1.ConditionStatus
		want   *member.Observation
	}{
		{pull.ReasonAgentReady, metav1.ConditionTrue, &member.Observation{Health: member.Healthy, Reason: pull.ReasonAgentReady, At: tEarlier}},
		{pull.ReasonAgentSilent, metav1.ConditionUnknown, &member.Observation{Health: member.Unreachable, Reason: pull.ReasonAgentSilent, At: tEarlier}},
		{"EtcdNotReady", metav1.ConditionFalse, &member.Observation{Health: member.NotReady, Reason: "EtcdNotReady", At: tEarlier}},
		{pull.ReasonNotAccepted, metav1.ConditionFalse, nil},
	} {
		mc := mcWith(1, v1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: tt.status, Reason: tt.reason, LastTransitionTime: ltt}}})
		if d := cmp.Diff(tt.want, initialPullHealth(mc)); d != "" {
			t.Errorf("%s: initialPullHealth() mismatch (-want +got):\n%s", tt.reason, d)
		}
	}
}
