package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/ratelimit"
)

// Failover tunes cluster failover: when a member that is not Ready gets
// the NoExecute taint that moves the objects not tolerating it elsewhere,
// and the brakes that keep a blip from moving everything.
type Failover struct {
	// Disabled keeps members that are not Ready at NoSchedule: nothing is
	// evicted.
	Disabled bool
	// GracePeriod is how long a member stays not Ready (tainted NoSchedule)
	// before it is tainted NoExecute (default 30 s).
	GracePeriod time.Duration
	// DisruptionThreshold is the fraction of failure domains (zones, else
	// regions) disrupted above which the control plane assumes the fault
	// is its own (its network) and evicts nothing (default 0.55).
	DisruptionThreshold float64
	// UnhealthyZoneThreshold is the fraction of a failure domain's members
	// not Ready (at least two of them) from which the domain is partially
	// disrupted and none of its members is evicted (default 0.55).
	UnhealthyZoneThreshold float64
	// SmallFederationSize: a federation of fewer members is small (default
	// 3; 0 turns the rule off).
	SmallFederationSize int
	// SmallFederationGracePeriod replaces GracePeriod, when longer, in a
	// small federation (default 5 minutes).
	SmallFederationGracePeriod time.Duration
	// ClustersPerMinute is how many members may be tainted NoExecute a
	// minute, federation-wide (default 1; 0 or less: no limit).
	ClustersPerMinute float64
	// ObjectsPerMinutePerCluster is how many objects the scheduler may move
	// off one evicted member a minute (default 60; 0 or less: no limit).
	// The schedule controller applies it.
	ObjectsPerMinutePerCluster float64
}

// DefaultFailover returns the defaults: with the default probe settings a
// member that stops answering is tainted NoExecute about a minute later
// (30 s to mark it unreachable, 30 s of grace), or about five and a half
// minutes later in a federation of fewer than three members; at most one
// member is tainted a minute, and objects leave it at 60 a minute.
func DefaultFailover() Failover {
	return Failover{
		GracePeriod:                30 * time.Second,
		DisruptionThreshold:        0.55,
		UnhealthyZoneThreshold:     0.55,
		SmallFederationSize:        3,
		SmallFederationGracePeriod: 5 * time.Minute,
		ClustersPerMinute:          1,
		ObjectsPerMinutePerCluster: 60,
	}
}

// withDefaults fills the durations and thresholds left zero; the sizes and
// rates keep their zero (off) values.
func (f Failover) withDefaults() Failover {
	d := DefaultFailover()
	if f.GracePeriod <= 0 {
		f.GracePeriod = d.GracePeriod
	}
	if f.DisruptionThreshold <= 0 {
		f.DisruptionThreshold = d.DisruptionThreshold
	}
	if f.UnhealthyZoneThreshold <= 0 {
		f.UnhealthyZoneThreshold = d.UnhealthyZoneThreshold
	}
	return f
}

// evictionPlan is what renderTaints may do about NoExecute taints.
type evictionPlan struct {
	// allowed is false when failover is disabled or a brake holds the
	// member back.
	allowed bool
	// grace is how long a member must be not Ready before eviction.
	grace time.Duration
	// tookToken says a token of the clusters-per-minute bucket was taken
	// for this eviction (returned when the taint cannot be written).
	tookToken bool
	// restartGrace says a disruption that held the member's eviction back
	// has just ended: its grace period starts again now, recorded by
	// moving the managed NoSchedule taint's TimeAdded to now.
	restartGrace bool
}

// managedKey reports whether a taint key is one the cluster controller
// manages.
func managedKey(key string) bool {
	return key == v1alpha1.TaintUnreachable || key == v1alpha1.TaintNotReady
}

// unhealthySince is when the member was first marked not Ready: the
// earliest TimeAdded of the managed taints (now when there are none).
func unhealthySince(taints []corev1.Taint, now time.Time) time.Time {
	since := now
	for _, t := range taints {
		if managedKey(t.Key) && t.TimeAdded != nil && t.TimeAdded.Time.Before(since) {
			since = t.TimeAdded.Time
		}
	}
	return since
}

// renderTaints returns the taints a MemberCluster should carry: the
// operator's taints unchanged, plus, while the member is unreachable (or
// not ready), flotilla.io/unreachable (flotilla.io/not-ready) with effect
// NoSchedule at once and, once the member has been not Ready for the
// grace period and eviction is allowed, with effect NoExecute too. Existing
// managed taints keep their TimeAdded, except that plan.restartGrace moves
// the NoSchedule taint's to now (the grace period counts from it); a NoExecute taint already there
// stays while the member is not Ready even when eviction is no longer
// allowed (what moved stays moved). A member that goes from one unhealthy
// state to the other (an apiserver that alternately refuses connections
// and fails) is the same failure: its managed taints take the new key
// and keep their TimeAdded, the earliest of each effect, so neither the
// grace period nor an eviction starts over. Unknown health keeps the
// current managed taints. next is how long until a NoExecute taint is due
// (zero when none is).
func renderTaints(current []corev1.Taint, snap healthView, plan evictionPlan, now time.Time) (out []corev1.Taint, next time.Duration) {
	if !snap.known {
		return current, 0
	}
	want := snap.taintKey
	since := unhealthySince(current, now)
	schedule, execute := -1, -1 // indexes in out of the managed taints kept
	for _, t := range current {
		switch {
		case !managedKey(t.Key):
			out = append(out, t)
			continue
		case want == "":
			continue // healthy: the managed taints go
		}
		t.Key = want
		kept := &schedule
		switch t.Effect {
		case corev1.TaintEffectNoSchedule:
			if plan.restartGrace {
				added := metav1.NewTime(now)
				t.TimeAdded = &added
			}
		case corev1.TaintEffectNoExecute:
			kept = &execute
		default:
			continue
		}
		if *kept < 0 {
			*kept = len(out)
			out = append(out, t)
		} else if k := &out[*kept]; t.TimeAdded != nil && (k.TimeAdded == nil || t.TimeAdded.Before(k.TimeAdded)) {
			k.TimeAdded = t.TimeAdded
		}
	}
	if want == "" {
		return out, 0
	}
	if plan.restartGrace {
		since = now
	}
	if schedule < 0 {
		added := metav1.NewTime(now)
		out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added})
	}
	if execute >= 0 || !plan.allowed {
		return out, 0
	}
	if due := since.Add(plan.grace); now.Before(due) {
		return out, due.Sub(now)
	}
	added := metav1.NewTime(now)
	out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	return out, 0
}

// healthView is the part of a snapshot renderTaints needs.
type healthView struct {
	// known says whether the health is known.
	known bool
	// taintKey is the managed taint the health calls for ("" when healthy).
	taintKey string
}

// addedNoExecute returns the managed NoExecute taint in after when before
// had none (under either managed key: one that only changed its key is
// no new eviction), if any.
func addedNoExecute(before, after []corev1.Taint) *corev1.Taint {
	if hasNoExecute(before) {
		return nil
	}
	for i := range after {
		if t := &after[i]; managedKey(t.Key) && t.Effect == corev1.TaintEffectNoExecute {
			return t
		}
	}
	return nil
}

// notReadySince is when the member stopped being Ready, for messages: the
// earlier of its taints' start (unhealthySince) and the last transition of
// a Ready condition that is not True. A restarted grace period moves the
// taint's TimeAdded forward (renderTaints), but the member has been not
// Ready since its condition says.
func notReadySince(conds []metav1.Condition, taints []corev1.Taint, now time.Time) time.Time {
	since := unhealthySince(taints, now)
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue &&
		!c.LastTransitionTime.IsZero() && c.LastTransitionTime.Time.Before(since) {
		since = c.LastTransitionTime.Time
	}
	return since
}

// evictionMessage says why a member was tainted NoExecute.
func evictionMessage(t *corev1.Taint, since time.Time, now time.Time) string {
	return fmt.Sprintf("not Ready for %s: tainted %s:NoExecute; objects that do not tolerate it move to other clusters (their copies here are deleted once the replacements are Ready and the cluster answers)",
		now.Sub(since).Round(time.Second), t.Key)
}

// disruptionRecheck is how often an unhealthy member whose eviction is held
// back by a disruption is looked at again.
const disruptionRecheck = 10 * time.Second

// evictionPlan decides whether mc may be tainted NoExecute now (failover
// is enabled, mc is not Ready, the brakes allow it and, once the grace
// period is over, the clusters-per-minute bucket has a token), records the
// state of every failure domain in the metrics, and returns why mc is held
// back (nil when it is not) and when to look again.
func (r *Reconciler) evictionPlan(ctx context.Context, mc *v1alpha1.MemberCluster, view healthView, now time.Time) (evictionPlan, *hold, time.Duration, error) {
	plan := evictionPlan{grace: r.Failover.GracePeriod}
	list := &v1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		return plan, nil, 0, fmt.Errorf("list MemberClusters: %w", err)
	}
	members := membersOf(list.Items, mc.Name, view.taintKey == "")
	r.observeZones(zoneStates(members, r.Failover.UnhealthyZoneThreshold))
	if r.Failover.Disabled || view.taintKey == "" || hasNoExecute(mc.Spec.Taints) {
		return plan, nil, 0, nil
	}
	if pending(mc) {
		// Not accepted (yet, or any more): an admin's decision, not a
		// failure, so no brake, grace period or rate token applies.
		return evictionPlan{allowed: true}, nil, 0, nil
	}
	since := unhealthySince(mc.Spec.Taints, now)
	d := decideBrakes(r.Failover, members, mc.Name, since, now)
	if (d.hold == nil || d.hold.reason != reasonSuppressed) && suppressedSince(mc.Status.Conditions, since) {
		// The disruption that held mc back ends now. Members come back
		// one by one, and the last must not be evicted at once for having
		// been not Ready longer than the grace period while the disruption
		// made that no fault of its own: its grace period starts again,
		// also when another brake (its zone's partial disruption) holds
		// it now, since that brake's end would otherwise evict it at once.
		since, plan.restartGrace = now, true
		d = decideBrakes(r.Failover, members, mc.Name, since, now)
	}
	plan.grace = d.grace
	switch {
	case !d.allowed:
		return plan, d.hold, disruptionRecheck, nil
	case !d.due:
		plan.allowed = true // renderTaints says when it is due
		if at := since.Add(r.Failover.GracePeriod); d.grace > r.Failover.GracePeriod && now.Before(at) {
			// A small federation: report the hold when the ordinary grace
			// period ends.
			return plan, d.hold, at.Sub(now), nil
		}
		return plan, d.hold, 0, nil
	}
	if wait := r.takeClusterToken(now, list.Items); wait > 0 {
		clusterRateLimited.WithLabelValues(mc.Name).Inc()
		return plan, &hold{reason: reasonRateLimited, message: fmt.Sprintf(
			"member clusters are tainted NoExecute at most %g a minute (--eviction-clusters-per-minute) and another one was moments ago: this one waits for its turn",
			r.Failover.ClustersPerMinute)}, wait, nil
	}
	plan.allowed, plan.tookToken = true, true
	return plan, nil, 0, nil
}

// returnClusterToken gives back the token of an eviction whose taint was
// refused (a write that may have applied keeps it).
func (r *Reconciler) returnClusterToken() {
	r.brakeMu.Lock()
	defer r.brakeMu.Unlock()
	if r.clusterBucket != nil {
		r.clusterBucket.Return()
	}
}

// hasNoExecute reports whether taints hold a managed taint with effect
// NoExecute (under either key: a member evicted while unreachable that is
// now not ready is still evicted).
func hasNoExecute(taints []corev1.Taint) bool {
	for _, t := range taints {
		if managedKey(t.Key) && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// takeClusterToken takes a token of the clusters-per-minute bucket, or
// returns how long until one is available. The bucket starts as if the
// newest eviction among members (their managed NoExecute taints) had
// just taken its token, so that a controller-manager restarting, or a
// new leader, during a wide failover keeps the pace instead of evicting
// one more member at once.
func (r *Reconciler) takeClusterToken(now time.Time, members []v1alpha1.MemberCluster) time.Duration {
	r.brakeMu.Lock()
	defer r.brakeMu.Unlock()
	if r.clusterBucket == nil {
		r.clusterBucket = ratelimit.NewBucket(r.Failover.ClustersPerMinute, 1)
		if last := newestEviction(members); !last.IsZero() && !last.After(now) {
			r.clusterBucket.Take(last)
		}
	}
	if wait := r.clusterBucket.Wait(now); wait > 0 {
		return wait
	}
	if gap := sinceEviction(newestEviction(members), now, r.Failover.ClustersPerMinute); gap > 0 {
		// A taint the bucket does not know of: one whose write returned
		// an error (client-go's retry of a timed-out update can end in a
		// conflict although the first attempt was stored), or another
		// leader's.
		return gap
	}
	r.clusterBucket.Take(now)
	return 0
}

// sinceEviction is how long the next eviction waits after the newest one
// (last; zero for none) at perMinute: 0 when it may go now. A TimeAdded
// ahead of now (another process's clock) waits one interval at most.
func sinceEviction(last, now time.Time, perMinute float64) time.Duration {
	if last.IsZero() || perMinute <= 0 {
		return 0
	}
	interval := time.Duration(float64(time.Minute) / perMinute)
	return min(interval-now.Sub(last), interval)
}

// newestEviction is the latest TimeAdded of the members' managed NoExecute
// taints (zero for none), leaving out members not accepted (tainted at
// once, without a token).
func newestEviction(members []v1alpha1.MemberCluster) time.Time {
	var last time.Time
	for i := range members {
		if pending(&members[i]) {
			continue
		}
		for _, t := range members[i].Spec.Taints {
			if managedKey(t.Key) && t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded != nil && t.TimeAdded.After(last) {
				last = t.TimeAdded.Time
			}
		}
	}
	return last
}

// setHeld records why mc's eviction is held back (nil: it is not), with
// a Warning event when that starts or its reason changes, and the metrics.
func (r *Reconciler) setHeld(mc *v1alpha1.MemberCluster, h *hold) {
	prev, had := r.held.Load(mc.Name)
	if h == nil {
		if had {
			r.held.Delete(mc.Name)
			heldGauge.DeleteLabelValues(mc.Name, prev.(string))
			suppressedGauge.WithLabelValues(mc.Name).Set(0)
		}
		return
	}
	if had && prev.(string) != h.reason {
		heldGauge.DeleteLabelValues(mc.Name, prev.(string))
	}
	heldGauge.WithLabelValues(mc.Name, h.reason).Set(1)
	if h.reason == reasonSuppressed {
		suppressedGauge.WithLabelValues(mc.Name).Set(1)
	} else {
		suppressedGauge.WithLabelValues(mc.Name).Set(0)
	}
	r.held.Store(mc.Name, h.reason)
	if (!had || prev.(string) != h.reason) && r.Recorder != nil {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, h.reason, "Failover", "%s", h.message)
	}
}

// forgetHeld drops what is recorded about a deleted member.
func (r *Reconciler) forgetHeld(name string) {
	if prev, had := r.held.LoadAndDelete(name); had {
		heldGauge.DeleteLabelValues(name, prev.(string))
	}
	suppressedGauge.DeleteLabelValues(name)
}

// observeZones exports every failure domain's state, and forgets the
// domains no member is in any more.
func (r *Reconciler) observeZones(zones map[string]zone) {
	r.brakeMu.Lock()
	defer r.brakeMu.Unlock()
	for d := range r.zones {
		if _, ok := zones[d]; !ok {
			zoneGauge.DeleteLabelValues(d)
		}
	}
	r.zones = map[string]bool{}
	for d, z := range zones {
		zoneGauge.WithLabelValues(d).Set(float64(z.state))
		r.zones[d] = true
	}
}

// renderHeld sets the EvictionHeld condition while a member's eviction is
// held back and removes it otherwise. Its transition time is when the
// hold of its reason began: a new reason starts it again (suppressedSince
// asks when the federation-wide hold began, which a zone's hold in
// between must not hide).
func renderHeld(st *v1alpha1.MemberClusterStatus, h *hold, generation int64, now time.Time) {
	if h == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionEvictionHeld)
		return
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionEvictionHeld); c != nil && c.Reason != h.reason {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionEvictionHeld)
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionEvictionHeld, Status: metav1.ConditionTrue, Reason: h.reason,
		Message: h.message, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
	})
}

// suppressedSince reports whether conds say the member's eviction is held
// back because most failure domains are disrupted (EvictionHeld True with
// reason EvictionSuppressed), a hold that began no earlier than since (the
// start of the member's grace period). A grace period restarted at the end
// of that hold starts after it, so a status write that failed after the
// restart does not restart it again. A zone's partial disruption does not
// count: its members are evicted once the zone is Normal or fully down,
// as ever, so that a flapping neighbour cannot keep one away for good.
func suppressedSince(conds []metav1.Condition, since time.Time) bool {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionEvictionHeld)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reasonSuppressed && !since.After(c.LastTransitionTime.Time)
}

// graceRestartedMessage says why a member's grace period started again.
func graceRestartedMessage(grace time.Duration) string {
	return fmt.Sprintf("the disruption that held this member's eviction back has ended while it is still not Ready: it is evicted if it stays not Ready for %s from now, not from when it stopped being Ready", grace)
}
