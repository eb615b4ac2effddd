package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Failover tunes cluster failover: when a member that is not Ready gets
// the NoExecute taint that moves the objects not tolerating it elsewhere.
type Failover struct {
	// Disabled keeps members that are not Ready at NoSchedule: nothing is
	// evicted.
	Disabled bool
	// GracePeriod is how long a member stays not Ready (tainted NoSchedule)
	// before it is tainted NoExecute (default 30 s).
	GracePeriod time.Duration
	// DisruptionThreshold is the fraction of members not Ready above which
	// the control plane assumes the fault is its own (its network) and
	// evicts nothing (default 0.55).
	DisruptionThreshold float64
}

// DefaultFailover returns the defaults: with the default probe settings a
// member that stops answering is tainted NoExecute about a minute later
// (30 s to mark it unreachable, 30 s of grace).
func DefaultFailover() Failover {
	return Failover{GracePeriod: 30 * time.Second, DisruptionThreshold: 0.55}
}

func (f Failover) withDefaults() Failover {
	d := DefaultFailover()
	if f.GracePeriod <= 0 {
		f.GracePeriod = d.GracePeriod
	}
	if f.DisruptionThreshold <= 0 {
		f.DisruptionThreshold = d.DisruptionThreshold
	}
	return f
}

// evictionPlan is what renderTaints may do about NoExecute taints.
type evictionPlan struct {
	// allowed is false when failover is disabled or the federation is in a
	// disruption (most members not Ready).
	allowed bool
	// grace is how long a member must be not Ready before eviction.
	grace time.Duration
}

// disruption reports whether more than threshold of the members are not
// Ready, counting the members not being deleted (mc's own state is taken
// from healthy, which is newer than its recorded status). It also returns
// the counts for messages.
func disruption(all []v1alpha1.MemberCluster, self string, selfReady bool, threshold float64) (bool, int, int) {
	total, notReady := 0, 0
	for i := range all {
		c := &all[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		total++
		ready := meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady)
		if c.Name == self {
			ready = selfReady
		}
		if !ready {
			notReady++
		}
	}
	if total == 0 {
		return false, 0, 0
	}
	return float64(notReady) > threshold*float64(total), notReady, total
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
// managed taints keep their TimeAdded; a NoExecute taint already there
// stays while the member is not Ready even when eviction is no longer
// allowed (what moved stays moved). Unknown health keeps the current
// managed taints. next is how long until a NoExecute taint is due (zero
// when none is).
func renderTaints(current []corev1.Taint, snap healthView, plan evictionPlan, now time.Time) (out []corev1.Taint, next time.Duration) {
	if !snap.known {
		return current, 0
	}
	want := snap.taintKey
	since := unhealthySince(current, now)
	var haveSchedule, haveExecute bool
	for _, t := range current {
		switch {
		case !managedKey(t.Key):
			out = append(out, t)
		case t.Key != want:
			// The member is healthy, or in the other unhealthy state.
		case t.Effect == corev1.TaintEffectNoSchedule && !haveSchedule:
			out = append(out, t)
			haveSchedule = true
		case t.Effect == corev1.TaintEffectNoExecute && !haveExecute:
			out = append(out, t)
			haveExecute = true
		}
	}
	if want == "" {
		return out, 0
	}
	if !haveSchedule {
		added := metav1.NewTime(now)
		out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added})
	}
	if haveExecute || !plan.allowed {
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

// addedNoExecute returns the managed NoExecute taint in after that before
// did not have, if any.
func addedNoExecute(before, after []corev1.Taint) *corev1.Taint {
	for i := range after {
		t := &after[i]
		if !managedKey(t.Key) || t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		found := false
		for _, b := range before {
			if b.Key == t.Key && b.Effect == t.Effect {
				found = true
			}
		}
		if !found {
			return t
		}
	}
	return nil
}

// evictionMessage says why a member was tainted NoExecute.
func evictionMessage(t *corev1.Taint, since time.Time, now time.Time) string {
	return fmt.Sprintf("not Ready for %s: tainted %s:NoExecute; objects that do not tolerate it move to other clusters (their copies here are deleted once the replacements are Ready and the cluster answers)",
		now.Sub(since).Round(time.Second), t.Key)
}

// disruptionRecheck is how often an unhealthy member whose eviction is held
// back by a disruption is looked at again.
const disruptionRecheck = 10 * time.Second

// evictionPlan decides whether mc may be tainted NoExecute now: failover
// is enabled, mc is not Ready, and not most members are (a disruption,
// reported once by an event and a metric while it lasts).
func (r *Reconciler) evictionPlan(ctx context.Context, mc *v1alpha1.MemberCluster, view healthView) (evictionPlan, error) {
	plan := evictionPlan{grace: r.Failover.GracePeriod}
	if r.Failover.Disabled || view.taintKey == "" {
		r.setSuppressed(mc, false, "")
		return plan, nil
	}
	list := &v1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		return plan, fmt.Errorf("list MemberClusters: %w", err)
	}
	disrupted, notReady, total := disruption(list.Items, mc.Name, false, r.Failover.DisruptionThreshold)
	plan.allowed = !disrupted
	r.setSuppressed(mc, disrupted, fmt.Sprintf("%d of %d member clusters are not Ready (more than %.0f%%): treating it as a problem of the control plane's own connectivity and evicting nothing", notReady, total, r.Failover.DisruptionThreshold*100))
	return plan, nil
}

// setSuppressed records whether mc's eviction is held back, with an event
// when that starts.
func (r *Reconciler) setSuppressed(mc *v1alpha1.MemberCluster, on bool, msg string) {
	if !on {
		if _, was := r.suppressed.LoadAndDelete(mc.Name); was {
			suppressedGauge.WithLabelValues(mc.Name).Set(0)
		}
		return
	}
	suppressedGauge.WithLabelValues(mc.Name).Set(1)
	if _, was := r.suppressed.LoadOrStore(mc.Name, true); !was && r.Recorder != nil {
		r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, "EvictionSuppressed", "Failover", "%s", msg)
	}
}
