package maintenance

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// CordonTaint is the taint cordon adds: flotilla.io/unschedulable,
// NoSchedule, stamped with now (to the second).
func CordonTaint(now time.Time) corev1.Taint {
	t := metav1.NewTime(now.Truncate(time.Second))
	return corev1.Taint{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &t}
}

// DrainTaint is the taint drain adds besides the cordon taint:
// flotilla.io/draining, NoExecute, with the value "force" when forced
// (the only value that lets the last copy of an object go).
func DrainTaint(now time.Time, force bool) corev1.Taint {
	t := metav1.NewTime(now.Truncate(time.Second))
	taint := corev1.Taint{Key: v1alpha1.TaintDraining, Effect: corev1.TaintEffectNoExecute, TimeAdded: &t}
	if force {
		taint.Value = v1alpha1.DrainForce
	}
	return taint
}

// WithTaint returns taints with t added at the end, and true, unless a
// taint with t's key and effect is already there: then it keeps its
// timeAdded and takes t's value (a drain --force over a plain drain, or a
// plain drain over a forced one), and the result is true only if the
// value changed. taints is never modified.
func WithTaint(taints []corev1.Taint, t corev1.Taint) ([]corev1.Taint, bool) {
	for i, have := range taints {
		if have.Key == t.Key && have.Effect == t.Effect {
			if have.Value == t.Value {
				return taints, false
			}
			out := slices.Clone(taints)
			out[i].Value = t.Value
			return out, true
		}
	}
	return append(slices.Clone(taints), t), true
}

// WithoutTaints returns taints without those whose key is one of keys
// (whatever their effect), the others in order, and whether any was
// removed. taints is never modified.
func WithoutTaints(taints []corev1.Taint, keys ...string) ([]corev1.Taint, bool) {
	kept := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if !slices.Contains(keys, t.Key) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(taints) {
		return taints, false
	}
	return kept, true
}
