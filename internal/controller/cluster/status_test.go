package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

// Times with nanoseconds, so that a round trip through JSON (which keeps
// seconds) changes them.
var (
	tEarlier = time.Date(2025, 3, 1, 8, 0, 0, 123456789, time.UTC)
	tNow     = time.Date(2025, 3, 1, 9, 30, 0, 987654321, time.UTC)
)

var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func diff(want, got any) string { return cmp.Diff(want, got, quantityCmp) }

var (
	obsHealthy      = member.Observation{Health: member.Healthy, Reason: member.ReasonReady, Message: "the member's apiserver is ready", At: tEarlier}
	obsUnreachable  = member.Observation{Health: member.Unreachable, Reason: member.ReasonUnreachable, Message: "cannot contact the member's apiserver: connection refused", At: tEarlier}
	obsUnauthorized = member.Observation{Health: member.NotReady, Reason: member.ReasonUnauthorized, Message: "401", At: tEarlier}
	obsForbidden    = member.Observation{Health: member.NotReady, Reason: member.ReasonForbidden, Message: "403", At: tEarlier}
	obsNotReady     = member.Observation{Health: member.NotReady, Reason: member.ReasonAPIServerNotReady, Message: "/readyz answered 500: [-]etcd failed", At: tEarlier}
	obsNoSecret     = member.Observation{Health: member.NotReady, Reason: member.ReasonSecretNotFound, Message: "Secret flotilla-system/east not found", At: tEarlier}
	obsBadCreds     = member.Observation{Health: member.NotReady, Reason: member.ReasonInvalidCredentials, Message: "invalid credentials", At: tEarlier}
	obsPull         = member.Observation{Health: member.NotReady, Reason: member.ReasonSyncModeUnsupported, Message: "syncMode Pull", At: tEarlier}
)

func known(o member.Observation) member.Snapshot {
	return member.Snapshot{Health: o, HealthKnown: true}
}

// condWant is the part of a condition the tests check.
type condWant struct {
	status         metav1.ConditionStatus
	reason         string
	message        string // exact unless messagePrefix
	messagePrefix  bool
	observedGen    int64
	transitionTime time.Time
}

func checkCondition(t *testing.T, conds []metav1.Condition, typ string, want condWant) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Errorf("condition %s missing in %+v", typ, conds)
		return
	}
	if c.Status != want.status || c.Reason != want.reason {
		t.Errorf("%s = %s/%s, want %s/%s", typ, c.Status, c.Reason, want.status, want.reason)
	}
	if want.messagePrefix && !strings.HasPrefix(c.Message, want.message) || !want.messagePrefix && c.Message != want.message {
		t.Errorf("%s message = %q, want %q (prefix only: %v)", typ, c.Message, want.message, want.messagePrefix)
	}
	if c.ObservedGeneration != want.observedGen {
		t.Errorf("%s observedGeneration = %d, want %d", typ, c.ObservedGeneration, want.observedGen)
	}
	if !want.transitionTime.IsZero() && !c.LastTransitionTime.Time.Equal(want.transitionTime) {
		t.Errorf("%s lastTransitionTime = %v, want %v", typ, c.LastTransitionTime.Time, want.transitionTime)
	}
}

const reachableMsg = "the member's apiserver answers"

func TestConditionsFor(t *testing.T) {
	tests := []struct {
		name           string
		obs            member.Observation
		ready, offline condWant
	}{
		{
			name:    "healthy",
			obs:     obsHealthy,
			ready:   condWant{status: metav1.ConditionTrue, reason: member.ReasonReady, message: obsHealthy.Message},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg},
		},
		{
			name:    "unreachable",
			obs:     obsUnreachable,
			ready:   condWant{status: metav1.ConditionUnknown, reason: member.ReasonUnreachable, message: obsUnreachable.Message},
			offline: condWant{status: metav1.ConditionTrue, reason: member.ReasonUnreachable, message: obsUnreachable.Message},
		},
		{
			name:    "unauthorized answers, so it is not offline",
			obs:     obsUnauthorized,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonUnauthorized, message: "401"},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg},
		},
		{
			name:    "forbidden answers, so it is not offline",
			obs:     obsForbidden,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonForbidden, message: "403"},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg},
		},
		{
			name:    "apiserver not ready answers, so it is not offline",
			obs:     obsNotReady,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonAPIServerNotReady, message: obsNotReady.Message},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg},
		},
		{
			name:    "secret not found is not probed",
			obs:     obsNoSecret,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonSecretNotFound, message: obsNoSecret.Message},
			offline: condWant{status: metav1.ConditionUnknown, reason: reasonNotProbed, message: "the member is not probed: " + obsNoSecret.Message},
		},
		{
			name:    "invalid credentials are not probed",
			obs:     obsBadCreds,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonInvalidCredentials, message: obsBadCreds.Message},
			offline: condWant{status: metav1.ConditionUnknown, reason: reasonNotProbed, message: "the member is not probed: " + obsBadCreds.Message},
		},
		{
			name:    "pull mode is not probed",
			obs:     obsPull,
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonSyncModeUnsupported, message: obsPull.Message},
			offline: condWant{status: metav1.ConditionUnknown, reason: reasonNotProbed, message: "the member is not probed: " + obsPull.Message},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := conditionsFor(tt.obs, 5)
			if len(conds) != 2 {
				t.Fatalf("conditionsFor() returned %d conditions, want 2: %+v", len(conds), conds)
			}
			tt.ready.observedGen, tt.offline.observedGen = 5, 5
			checkCondition(t, conds, v1alpha1.ConditionReady, tt.ready)
			checkCondition(t, conds, v1alpha1.ConditionOffline, tt.offline)
		})
	}
}

// fullStatus is a status as an earlier run wrote it for obs at tEarlier.
func fullStatus(obs member.Observation, gen int64) v1alpha1.MemberClusterStatus {
	st := v1alpha1.MemberClusterStatus{
		KubernetesVersion:    "v1.33.1",
		APIResources:         []v1alpha1.APIResource{{Version: "v1", Kind: "Pod", Resource: "pods", Scope: v1alpha1.ScopeNamespaced}},
		Scheduling:           "Schedulable",
		NodeCount:            3,
		SchedulableNodeCount: 2,
		Resources: v1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")},
			Available:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("60Gi")},
		},
		ObservedGeneration: gen,
	}
	for _, c := range conditionsFor(obs, gen) {
		c.LastTransitionTime = metav1.NewTime(tEarlier)
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

func mcWith(gen int64, st v1alpha1.MemberClusterStatus) *v1alpha1.MemberCluster {
	return &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: gen},
		Status:     st,
	}
}

func TestRenderStatusConditions(t *testing.T) {
	tests := []struct {
		name           string
		current        v1alpha1.MemberClusterStatus
		snap           member.Snapshot
		ready, offline condWant
	}{
		{
			name:    "first healthy observation",
			snap:    known(obsHealthy),
			ready:   condWant{status: metav1.ConditionTrue, reason: member.ReasonReady, message: obsHealthy.Message, transitionTime: tNow},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tNow},
		},
		{
			name:    "first unreachable observation",
			snap:    known(obsUnreachable),
			ready:   condWant{status: metav1.ConditionUnknown, reason: member.ReasonUnreachable, message: obsUnreachable.Message, transitionTime: tNow},
			offline: condWant{status: metav1.ConditionTrue, reason: member.ReasonUnreachable, message: obsUnreachable.Message, transitionTime: tNow},
		},
		{
			name:    "not ready with a probe reason is not offline",
			snap:    known(obsUnauthorized),
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonUnauthorized, message: "401", transitionTime: tNow},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tNow},
		},
		{
			name:    "secret not found leaves offline unknown",
			snap:    known(obsNoSecret),
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonSecretNotFound, message: obsNoSecret.Message, transitionTime: tNow},
			offline: condWant{status: metav1.ConditionUnknown, reason: reasonNotProbed, message: "the member is not probed: ", messagePrefix: true, transitionTime: tNow},
		},
		{
			name:    "unchanged health keeps the transition times",
			current: fullStatus(obsHealthy, 4),
			snap:    known(obsHealthy),
			ready:   condWant{status: metav1.ConditionTrue, reason: member.ReasonReady, message: obsHealthy.Message, transitionTime: tEarlier},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tEarlier},
		},
		{
			name:    "new message with the same status keeps the transition time",
			current: fullStatus(obsUnreachable, 4),
			snap:    known(member.Observation{Health: member.Unreachable, Reason: member.ReasonUnreachable, Message: "timed out", At: tNow}),
			ready:   condWant{status: metav1.ConditionUnknown, reason: member.ReasonUnreachable, message: "timed out", transitionTime: tEarlier},
			offline: condWant{status: metav1.ConditionTrue, reason: member.ReasonUnreachable, message: "timed out", transitionTime: tEarlier},
		},
		{
			name:    "new reason with the same status keeps the transition time",
			current: fullStatus(obsUnauthorized, 4),
			snap:    known(obsForbidden),
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonForbidden, message: "403", transitionTime: tEarlier},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tEarlier},
		},
		{
			name:    "healthy to unreachable moves both transition times",
			current: fullStatus(obsHealthy, 4),
			snap:    known(obsUnreachable),
			ready:   condWant{status: metav1.ConditionUnknown, reason: member.ReasonUnreachable, message: obsUnreachable.Message, transitionTime: tNow},
			offline: condWant{status: metav1.ConditionTrue, reason: member.ReasonUnreachable, message: obsUnreachable.Message, transitionTime: tNow},
		},
		{
			name:    "unreachable to unauthorized moves both transition times",
			current: fullStatus(obsUnreachable, 4),
			snap:    known(obsUnauthorized),
			ready:   condWant{status: metav1.ConditionFalse, reason: member.ReasonUnauthorized, message: "401", transitionTime: tNow},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tNow},
		},
		{
			name:    "unauthorized to healthy moves only Ready",
			current: fullStatus(obsUnauthorized, 4),
			snap:    known(obsHealthy),
			ready:   condWant{status: metav1.ConditionTrue, reason: member.ReasonReady, message: obsHealthy.Message, transitionTime: tNow},
			offline: condWant{status: metav1.ConditionFalse, reason: reasonReachable, message: reachableMsg, transitionTime: tEarlier},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := mcWith(4, tt.current)
			before := mc.Status.DeepCopy()
			st := renderStatus(mc, tt.snap, tNow)
			tt.ready.observedGen, tt.offline.observedGen = 4, 4
			checkCondition(t, st.Conditions, v1alpha1.ConditionReady, tt.ready)
			checkCondition(t, st.Conditions, v1alpha1.ConditionOffline, tt.offline)
			if len(st.Conditions) != 2 {
				t.Errorf("status has %d conditions, want 2: %+v", len(st.Conditions), st.Conditions)
			}
			if st.ObservedGeneration != 4 {
				t.Errorf("observedGeneration = %d, want 4", st.ObservedGeneration)
			}
			if !equality.Semantic.DeepEqual(&mc.Status, before) {
				t.Errorf("renderStatus modified the MemberCluster's status (-before +after):\n%s", diff(before, &mc.Status))
			}
		})
	}
}

func TestRenderStatusKeepsWhatTheSnapshotDoesNotKnow(t *testing.T) {
	newResources := []v1alpha1.APIResource{{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Scope: v1alpha1.ScopeNamespaced}}
	newSummary := member.Summary{
		Nodes: 5, SchedulableNodes: 4,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")},
		Available:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
	}
	tests := []struct {
		name   string
		gen    int64
		snap   member.Snapshot
		mutate func(want *v1alpha1.MemberClusterStatus) // from the current status; nil: unchanged
	}{
		{
			name: "nothing known: status untouched (a restart writes nothing)",
			gen:  4,
			snap: member.Snapshot{},
		},
		{
			name: "nothing known but the health, which did not change",
			gen:  4,
			snap: known(member.Observation{Health: member.Healthy, Reason: member.ReasonReady, Message: obsHealthy.Message, At: tNow}),
		},
		{
			name: "nothing known with a new generation only bumps observedGeneration",
			gen:  5,
			snap: member.Snapshot{},
			mutate: func(want *v1alpha1.MemberClusterStatus) {
				want.ObservedGeneration = 5
			},
		},
		{
			name: "version known",
			gen:  4,
			snap: member.Snapshot{Version: "v1.34.0"},
			mutate: func(want *v1alpha1.MemberClusterStatus) {
				want.KubernetesVersion = "v1.34.0"
			},
		},
		{
			name: "API resources known",
			gen:  4,
			snap: member.Snapshot{APIResources: newResources},
			mutate: func(want *v1alpha1.MemberClusterStatus) {
				want.APIResources = newResources
			},
		},
		{
			name: "summary known",
			gen:  4,
			snap: member.Snapshot{Summary: newSummary, SummaryKnown: true},
			mutate: func(want *v1alpha1.MemberClusterStatus) {
				want.NodeCount, want.SchedulableNodeCount = 5, 4
				want.Resources = v1alpha1.ResourceSummary{Allocatable: newSummary.Allocatable, Available: newSummary.Available}
			},
		},
		{
			name: "summary known to be empty clears the counts",
			gen:  4,
			snap: member.Snapshot{SummaryKnown: true},
			mutate: func(want *v1alpha1.MemberClusterStatus) {
				want.NodeCount, want.SchedulableNodeCount = 0, 0
				want.Resources = v1alpha1.ResourceSummary{}
			},
		},
		{
			name: "summary not known keeps the counts even with other fields known",
			gen:  4,
			snap: member.Snapshot{Summary: newSummary, SummaryKnown: false, Version: "v1.33.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := fullStatus(obsHealthy, 4)
			mc := mcWith(tt.gen, current)
			want := *current.DeepCopy()
			if tt.mutate != nil {
				tt.mutate(&want)
			}
			got := renderStatus(mc, tt.snap, tNow)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("renderStatus() mismatch (-want +got):\n%s", diff(want, got))
			}
			if tt.mutate == nil && !equality.Semantic.DeepEqual(got, mc.Status) {
				t.Errorf("renderStatus() differs from the current status, which would cause a write")
			}
		})
	}
}

// roundTrip passes mc through JSON as the API server stores it (times lose
// their sub-second part).
func roundTrip(t *testing.T, mc *v1alpha1.MemberCluster) *v1alpha1.MemberCluster {
	t.Helper()
	b, err := json.Marshal(mc)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &v1alpha1.MemberCluster{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

// TestRestartWritesNothing runs what the reconciler does after a restart:
// seed a new damper from the stored Ready condition, probe once with the same
// outcome (but a different message), and render status and taints. Nothing
// may differ from what is stored.
func TestRestartWritesNothing(t *testing.T) {
	operatorTaint := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectPreferNoSchedule}
	tests := []struct {
		name   string
		stored member.Observation
		probe  *member.Observation // nil: no probe finished yet
	}{
		{name: "healthy, before the first probe", stored: obsHealthy},
		{name: "healthy", stored: obsHealthy, probe: &member.Observation{Health: member.Healthy, Reason: member.ReasonReady, Message: "ready again"}},
		{name: "unreachable, before the first probe", stored: obsUnreachable},
		{name: "unreachable", stored: obsUnreachable, probe: &member.Observation{Health: member.Unreachable, Reason: member.ReasonUnreachable, Message: "i/o timeout"}},
		{name: "unauthorized", stored: obsUnauthorized, probe: &member.Observation{Health: member.NotReady, Reason: member.ReasonUnauthorized, Message: "401 again"}},
		{name: "forbidden", stored: obsForbidden, probe: &member.Observation{Health: member.NotReady, Reason: member.ReasonForbidden, Message: "403 again"}},
		{name: "apiserver not ready", stored: obsNotReady, probe: &member.Observation{Health: member.NotReady, Reason: member.ReasonAPIServerNotReady, Message: "[-]etcd failed again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An earlier run wrote status and taints.
			mc := mcWith(2, v1alpha1.MemberClusterStatus{})
			mc.Spec.Taints = []corev1.Taint{operatorTaint}
			mc.Spec.Taints, _ = renderTaints(mc.Spec.Taints, viewOf(known(tt.stored)), evictionPlan{allowed: true, grace: time.Hour}, tEarlier)
			mc.Status = renderStatus(mc, known(tt.stored), tEarlier) // as Reconcile: taints first
			mc = roundTrip(t, mc)

			// The restarted controller.
			initial := initialHealth(mc)
			if initial == nil {
				t.Fatalf("initialHealth() = nil for a stored %s/%s", tt.stored.Health, tt.stored.Reason)
			}
			d := member.NewDamper(20*time.Second, 10*time.Second, initial)
			if tt.probe != nil {
				p := *tt.probe
				p.At = tNow
				if _, changed := d.Observe(p); changed {
					t.Fatalf("the first probe after the restart changed the committed health")
				}
			}
			committed, ok := d.Committed()
			snap := member.Snapshot{Health: committed, HealthKnown: ok}

			if got := renderStatus(mc, snap, tNow); !equality.Semantic.DeepEqual(got, mc.Status) {
				t.Errorf("status after the restart differs, which causes a write (-stored +rendered):\n%s", diff(mc.Status, got))
			}
			if got, _ := renderTaints(mc.Spec.Taints, viewOf(snap), evictionPlan{}, tNow); !equality.Semantic.DeepEqual(got, mc.Spec.Taints) {
				t.Errorf("taints after the restart differ, which causes a write (-stored +rendered):\n%s", diff(mc.Spec.Taints, got))
			}
		})
	}
}
