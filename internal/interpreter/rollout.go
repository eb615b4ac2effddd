package interpreter

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// GovernsRollouts reports whether the kind has a rollout rule: a federated
// rollout may govern its pod template changes.
func (in *Interpreter) GovernsRollouts() bool { return in.rollout != nil }

// PodTemplatePath is the path of the kind's pod template; nil without one.
func (in *Interpreter) PodTemplatePath() []string { return in.podTemplate }

// RolloutPaused reports whether obj's paused field (the rollout rule's) is
// true.
func (in *Interpreter) RolloutPaused(obj *unstructured.Unstructured) bool {
	if in.rollout == nil {
		return false
	}
	p, _, _ := unstructured.NestedBool(obj.Object, in.rollout.paused...)
	return p
}

// SetRolloutPaused holds a copy on the pods it runs: its paused field
// true and, when the rule has a partition field, a partition of 100% (so
// that pods added while held start on the old template too), or, for a
// partition the kind's schema makes a plain integer, the largest int32.
func (in *Interpreter) SetRolloutPaused(obj *unstructured.Unstructured) error {
	if in.rollout == nil {
		return fmt.Errorf("%s has no rollout rule", in.kind)
	}
	if len(in.rollout.partition) > 0 {
		var all any = "100%"
		if in.rollout.integerPartition {
			all = int64(math.MaxInt32)
		}
		if err := unstructured.SetNestedField(obj.Object, all, in.rollout.partition...); err != nil {
			return err
		}
	}
	return unstructured.SetNestedField(obj.Object, true, in.rollout.paused...)
}

// PausedPath is the rule's paused field; nil without a rule.
func (in *Interpreter) PausedPath() []string {
	if in.rollout == nil {
		return nil
	}
	return in.rollout.paused
}

// OwnPartition reports whether obj sets a partition of its own (the
// rule's partition field, not 0): a rollout its user drives.
func (in *Interpreter) OwnPartition(obj *unstructured.Unstructured) bool {
	if in.rollout == nil || len(in.rollout.partition) == 0 {
		return false
	}
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, in.rollout.partition...)
	switch x := v.(type) {
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0" && x != "0%"
	}
	return found && v != nil
}

// RolloutBudget returns obj's maxSurge and maxUnavailable: as written,
// else the rule's defaults, else nil; and whether the kind can surge at
// all (it has a maxSurge field).
func (in *Interpreter) RolloutBudget(obj *unstructured.Unstructured) (surge, unavailable *intstr.IntOrString, surges bool) {
	if in.rollout == nil {
		return nil, nil, false
	}
	read := func(path []string) *intstr.IntOrString {
		if len(path) == 0 {
			return nil
		}
		v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
		if !found || v == nil {
			return nil
		}
		var out intstr.IntOrString
		switch x := v.(type) {
		case int64:
			out = intstr.FromInt32(clampInt32(x))
		case float64:
			out = intstr.FromInt32(clampInt32(int64(max(min(x, math.MaxInt32), math.MinInt32))))
		case string:
			out = intstr.FromString(x)
		default:
			return nil
		}
		return &out
	}
	surge, unavailable = read(in.rollout.maxSurge), read(in.rollout.maxUnavailable)
	if surge == nil {
		surge = in.rollout.defaultSurge
	}
	if unavailable == nil {
		unavailable = in.rollout.defaultUnavailable
	}
	return surge, unavailable, len(in.rollout.maxSurge) > 0
}

// SetRolloutShare writes a rolling copy's share of the budget to its
// maxSurge and maxUnavailable fields (those the kind has).
func (in *Interpreter) SetRolloutShare(obj *unstructured.Unstructured, surge, unavailable int32) error {
	if in.rollout == nil {
		return fmt.Errorf("%s has no rollout rule", in.kind)
	}
	if len(in.rollout.maxSurge) > 0 {
		if err := unstructured.SetNestedField(obj.Object, int64(surge), in.rollout.maxSurge...); err != nil {
			return err
		}
	}
	if len(in.rollout.maxUnavailable) > 0 {
		return unstructured.SetNestedField(obj.Object, int64(unavailable), in.rollout.maxUnavailable...)
	}
	return nil
}

// RolloutCounts returns how many of a member copy's replicas run its
// current template and how many are available: the rule's expressions,
// else status.updatedReplicas and status.availableReplicas. An expression
// that fails counts 0.
func (in *Interpreter) RolloutCounts(obj *unstructured.Unstructured) (updated, available int32) {
	count := func(p *program, field string) int32 {
		if in.rollout == nil || p == nil {
			n, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
			return max(clampInt32(n), 0)
		}
		n, err := p.evalInt32(map[string]any{varObject: obj.Object})
		if err != nil {
			return 0
		}
		return n
	}
	var u, a *program
	if in.rollout != nil {
		u, a = in.rollout.updated, in.rollout.available
	}
	return count(u, "updatedReplicas"), count(a, "availableReplicas")
}

// clampInt32 is n limited to int32's range: a member's copy (a pull
// agent's report among them) cannot turn a huge count into a negative one.
func clampInt32(n int64) int32 {
	return int32(max(math.MinInt32, min(math.MaxInt32, n)))
}
