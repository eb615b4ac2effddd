package cluster

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
)

// Reasons of the Offline condition.
const (
	reasonReachable = "ClusterReachable"
	reasonNotProbed = "NotProbed"
)

// reasonInsecureAllowed is the reason of the InsecureTransport condition
// and of the Warning event of an insecure connection that is allowed.
const reasonInsecureAllowed = "InsecureTransportAllowed"

// probeReasons are the Ready reasons that come from probing the member
// (the claim is checked once it answers); only those seed the damper of a
// new session.
var probeReasons = []string{member.ReasonReady, member.ReasonUnreachable, member.ReasonAPIServerNotReady, member.ReasonUnauthorized, member.ReasonForbidden,
	member.ReasonClaimedElsewhere, member.ReasonClaimFailed}

// renderStatus returns the status a MemberCluster should have given what
// its session knows. Fields the snapshot does not know yet keep their
// current values, so a restarted controller writes nothing until it learns
// something new.
func renderStatus(mc *v1alpha1.MemberCluster, snap member.Snapshot, now time.Time) v1alpha1.MemberClusterStatus {
	st := *mc.Status.DeepCopy()
	st.ObservedGeneration = mc.Generation
	if snap.HealthKnown {
		for _, c := range conditionsFor(snap.Health, mc.Generation) {
			c.LastTransitionTime = metav1.NewTime(now)
			meta.SetStatusCondition(&st.Conditions, c)
		}
	}
	st.Scheduling = schedulingState(mc.Spec.Taints)
	if snap.Version != "" {
		st.KubernetesVersion = snap.Version
	}
	if snap.APIResources != nil {
		st.APIResources = snap.APIResources
	}
	renderKindsRestricted(&st, mc, now)
	if snap.SummaryKnown {
		st.NodeCount = snap.Summary.Nodes
		st.SchedulableNodeCount = snap.Summary.SchedulableNodes
		st.Resources = v1alpha1.ResourceSummary{Allocatable: snap.Summary.Allocatable, Available: snap.Summary.Available}
	}
	return st
}

// renderInsecure sets the InsecureTransport condition while the connection
// has the insecurities listed (an insecure connection the operator allowed)
// and removes it otherwise.
func renderInsecure(st *v1alpha1.MemberClusterStatus, insecure []string, generation int64, now time.Time) {
	if len(insecure) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionInsecureTransport)
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionInsecureTransport, Status: metav1.ConditionTrue, Reason: reasonInsecureAllowed,
		Message: insecureMessage(insecure), ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
	})
}

// renderKindsRestricted sets the KindsRestricted condition while some
// served resources are read-only for the control plane (a push member's
// restricted join) or for the agent (a pull member whose agent's own RBAC
// in the member is narrow), and removes it otherwise.
func renderKindsRestricted(st *v1alpha1.MemberClusterStatus, mc *v1alpha1.MemberCluster, now time.Time) {
	readOnly := member.ResourceSummary(st.APIResources, true, 8)
	if readOnly == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionKindsRestricted)
		return
	}
	writable := member.ResourceSummary(st.APIResources, false, 20)
	if writable == "" {
		writable = "none of the resources it serves"
	}
	who, fix := "the control plane", "Join again with other --restrict-kinds, or without it for every kind: flotilla join "+mc.Name
	if mc.Spec.SyncMode == v1alpha1.SyncModePull {
		who, fix = "the agent", "Grant the agent's identity in the member the verbs "+strings.Join(member.WriteVerbs, ", ")+" on the kinds it should place"
	}
	msg := "the member's RBAC lets " + who + " write only " + writable +
		"; objects of other kinds are not placed here (read-only: " + readOnly + "). " + fix
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionKindsRestricted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMemberRBAC,
		Message: msg, ObservedGeneration: mc.Generation, LastTransitionTime: metav1.NewTime(now),
	})
}

// insecureMessage says what is insecure about a member connection and why
// it is used anyway.
func insecureMessage(insecure []string) string {
	return "INSECURE: " + strings.Join(insecure, "; ") + "; allowed only because the controller-manager runs with --allow-insecure-members: anyone on the network path may read or capture the member's credentials"
}

// conditionsFor maps a committed health observation to the Ready and
// Offline conditions: Ready is True when healthy, False when the member
// answers but is not usable, Unknown when it cannot be contacted.
func conditionsFor(o member.Observation, generation int64) []metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Reason: o.Reason, Message: o.Message, ObservedGeneration: generation}
	offline := metav1.Condition{Type: v1alpha1.ConditionOffline, ObservedGeneration: generation}
	switch o.Health {
	case member.Healthy:
		ready.Status = metav1.ConditionTrue
		offline.Status, offline.Reason, offline.Message = metav1.ConditionFalse, reasonReachable, "the member's apiserver answers"
	case member.Unreachable:
		ready.Status = metav1.ConditionUnknown
		offline.Status, offline.Reason, offline.Message = metav1.ConditionTrue, o.Reason, o.Message
	default:
		ready.Status = metav1.ConditionFalse
		if slices.Contains(probeReasons, o.Reason) {
			offline.Status, offline.Reason, offline.Message = metav1.ConditionFalse, reasonReachable, "the member's apiserver answers"
		} else {
			offline.Status, offline.Reason, offline.Message = metav1.ConditionUnknown, reasonNotProbed, "the member is not probed: "+o.Message
		}
	}
	return []metav1.Condition{ready, offline}
}

// viewOf is what renderTaints needs of a snapshot: whether the health is
// known and which managed taint it calls for.
func viewOf(snap member.Snapshot) healthView {
	if !snap.HealthKnown {
		return healthView{}
	}
	switch snap.Health.Health {
	case member.Unreachable:
		return healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	case member.NotReady:
		return healthView{known: true, taintKey: v1alpha1.TaintNotReady}
	}
	return healthView{known: true}
}

// initialHealth turns the Ready condition an earlier run recorded into the
// damper's starting state, so that a restart does not flip conditions.
func initialHealth(mc *v1alpha1.MemberCluster) *member.Observation {
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || !slices.Contains(probeReasons, c.Reason) {
		return nil
	}
	return observationOf(c)
}

// initialPullHealth is initialHealth of a pull member: the reasons of its
// Ready condition come from its agent's heartbeat (or the agent's own
// report), so a recorded one seeds the damper, and a restarted
// controller-manager, which gives the first renewal it sees no credit,
// keeps the recorded state meanwhile. NotAccepted, the state of a member
// no session ran for, seeds nothing: the first renewal then counts, so
// that a member just accepted turns Ready at once.
func initialPullHealth(mc *v1alpha1.MemberCluster) *member.Observation {
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason == pull.ReasonNotAccepted {
		return nil
	}
	return observationOf(c)
}

// observationOf is the observation a recorded Ready condition stands for.
func observationOf(c *metav1.Condition) *member.Observation {
	o := &member.Observation{Reason: c.Reason, Message: c.Message, At: c.LastTransitionTime.Time}
	switch c.Status {
	case metav1.ConditionTrue:
		o.Health = member.Healthy
	case metav1.ConditionFalse:
		o.Health = member.NotReady
	default:
		o.Health = member.Unreachable
	}
	return o
}

// schedulingState sums up a member's taints for kubectl get memberclusters,
// the most telling first.
func schedulingState(taints []corev1.Taint) string {
	has := func(match func(t *corev1.Taint) bool) bool {
		for i := range taints {
			if match(&taints[i]) {
				return true
			}
		}
		return false
	}
	hard := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	switch {
	case has(func(t *corev1.Taint) bool { return managedKey(t.Key) && t.Effect == corev1.TaintEffectNoExecute }):
		return "Evicting"
	case has(func(t *corev1.Taint) bool { return t.Key == v1alpha1.TaintDraining }):
		return "Draining"
	case has(func(t *corev1.Taint) bool { return managedKey(t.Key) }):
		return "NotReady"
	case has(func(t *corev1.Taint) bool { return t.Key == v1alpha1.TaintUnschedulable }):
		return "Cordoned"
	case has(hard):
		return "Tainted"
	}
	return "Schedulable"
}
