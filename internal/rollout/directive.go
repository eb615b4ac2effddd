package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Directive is how one cluster's copy is rendered in a federated
// rollout.
type Directive struct {
	// Revision labels the copy (v1alpha1.LabelRevision).
	Revision string
	// Hold keeps the copy on its current pods: a paused Deployment, or a
	// StatefulSet partitioned at its replicas, holds the new template
	// without rolling to it.
	Hold bool
	// Share, when set, replaces the copy's maxSurge and maxUnavailable.
	Share *Budget
}

// For returns the directive of a cluster's copy from the recorded plan
// st (nil: none yet), the host's current revision and the copy the member
// holds: whether it has one (true when unknown: a member cache that is not
// synced) and the revision it is labelled with. A copy rolls with its
// share while its cluster is Rolling, also when the template changed again
// meanwhile (it rolls on to the newer one within the same share); it is
// held while the plan has not admitted it, including the moment between a
// template change and the plan of the new revision. A cluster without a
// copy is never held: its new copy is created from the template (a paused
// new Deployment would start no pods at all).
func For(st *v1alpha1.RolloutStatus, revision, cluster string, hasCopy bool, copyRevision string) Directive {
	d := Directive{Revision: revision}
	if !hasCopy {
		return d
	}
	if st == nil {
		// No plan yet: only a copy known to hold another revision waits
		// for one (a copy labelled with none predates federated rollouts).
		d.Hold = copyRevision != "" && copyRevision != revision
		return d
	}
	e := Entry(st, cluster)
	switch {
	case e != nil && e.State == v1alpha1.RolloutRolling && e.MaxSurge+e.MaxUnavailable > 0:
		d.Share = &Budget{Surge: e.MaxSurge, Unavailable: e.MaxUnavailable}
	case e != nil && (e.State == v1alpha1.RolloutRolling || e.State == v1alpha1.RolloutDone) && st.Revision == revision:
		if e.MaxSurge+e.MaxUnavailable > 0 {
			d.Share = &Budget{Surge: e.MaxSurge, Unavailable: e.MaxUnavailable} // kept: finishing writes nothing
		}
	default:
		d.Hold = true
	}
	return d
}

// Deferred reports whether propagate should leave an existing copy as it
// is for now: the template changed and the plan for the new revision is
// not written yet, and the copy holds another revision and rolls with no
// share. The plan's write wakes propagate, which then renders the copy
// admitted (one write) or held, instead of holding it first and writing
// it again when admitted.
func Deferred(st *v1alpha1.RolloutStatus, revision, cluster string, known bool, copyRevision string) bool {
	if !known || copyRevision == revision || (st != nil && st.Revision == revision) {
		return false
	}
	if st == nil {
		return copyRevision != ""
	}
	e := Entry(st, cluster)
	return e == nil || e.State != v1alpha1.RolloutRolling || e.MaxSurge+e.MaxUnavailable == 0
}

// Revision identifies a workload's pod template: a hash of
// spec.template, so that only a change of what its pods run starts a
// rollout (not a change of replicas, strategy or labels).
func Revision(tmpl *unstructured.Unstructured) string {
	path := []string{"spec", "template"}
	if in := workload.RolloutInterpreter(tmpl); in != nil {
		path = in.PodTemplatePath()
	}
	pt, _, _ := unstructured.NestedFieldNoCopy(tmpl.Object, path...)
	b, err := json.Marshal(pt) // maps marshal in key order: stable
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Governed reports whether a change of tmpl's pod template rolls out
// under a federated budget: a workload divided over clusters (divided:
// its placement gives clusters replicas), unless flotilla.io/rollout says
// per-member, that is a Deployment with the RollingUpdate strategy, or a
// StatefulSet with the RollingUpdate strategy and no partition of its own
// (a partition set by hand is a rollout the user drives), or a custom kind
// whose WorkloadInterpreter has a rollout rule.
func Governed(tmpl *unstructured.Unstructured, divided bool) bool {
	if !divided || tmpl.GetAnnotations()[v1alpha1.AnnotationRollout] == v1alpha1.RolloutPerMember {
		return false
	}
	if in := workload.RolloutInterpreter(tmpl); in != nil {
		return !in.OwnPartition(tmpl) // a partition set by hand: the user drives
	}
	switch gvk := tmpl.GroupVersionKind(); {
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		t, _, _ := unstructured.NestedString(tmpl.Object, "spec", "strategy", "type")
		return t == "" || t == "RollingUpdate"
	case StatefulSet(tmpl):
		t, _, _ := unstructured.NestedString(tmpl.Object, "spec", "updateStrategy", "type")
		p, _, _ := unstructured.NestedInt64(tmpl.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
		return (t == "" || t == "RollingUpdate") && p == 0
	}
	return false
}

// Kind reports whether tmpl is of a kind whose pod template changes a
// federated rollout can govern (Governed decides for one object).
func Kind(tmpl *unstructured.Unstructured) bool {
	gvk := tmpl.GroupVersionKind()
	return gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet") || workload.RolloutInterpreter(tmpl) != nil
}

// StatefulSet reports whether tmpl is a StatefulSet: it rolls one
// position after the other, held by its partition, and never surges.
func StatefulSet(tmpl *unstructured.Unstructured) bool {
	gvk := tmpl.GroupVersionKind()
	return gvk.Group == "apps" && gvk.Kind == "StatefulSet"
}

// Paused reports whether the host object is paused (kubectl rollout
// pause; a custom kind's paused field): no cluster is admitted until it
// is resumed.
func Paused(tmpl *unstructured.Unstructured) bool {
	if in := workload.RolloutInterpreter(tmpl); in != nil {
		return in.RolloutPaused(tmpl)
	}
	p, _, _ := unstructured.NestedBool(tmpl.Object, "spec", "paused")
	return p
}

// defaultBudget is a Deployment's default maxSurge and maxUnavailable.
var defaultBudget = intstr.FromString("25%")

// Resolve returns a workload's budget against its total replicas, with
// Kubernetes' rules. A Deployment: maxSurge rounds up, maxUnavailable
// down, 25% each when unset, and a budget that comes to 0/0 allows one
// unavailable. A StatefulSet never surges; its maxUnavailable
// (spec.updateStrategy.rollingUpdate) rounds up, is 1 when unset, and at
// least 1.
func Resolve(tmpl *unstructured.Unstructured, total int32) (Budget, error) {
	if StatefulSet(tmpl) {
		unavailable := intstr.FromInt32(1)
		if v, found, _ := unstructured.NestedFieldNoCopy(tmpl.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); found {
			unavailable = intOrString(v)
		}
		u, err := intstr.GetScaledValueFromIntOrPercent(&unavailable, int(total), true)
		if err != nil {
			return Budget{}, err
		}
		return Budget{Unavailable: int32(max(u, 1))}, nil
	}
	surge, unavailable := defaultBudget, defaultBudget
	if in := workload.RolloutInterpreter(tmpl); in != nil {
		// A custom kind: its rule's fields, 25% each when unset; no surge
		// for a kind without a surge field.
		s, u, surges := in.RolloutBudget(tmpl)
		if s != nil {
			surge = *s
		}
		if !surges {
			surge = intstr.FromInt32(0)
		}
		if u != nil {
			unavailable = *u
		}
	} else {
		ru, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "strategy", "rollingUpdate")
		if v, ok := ru["maxSurge"]; ok {
			surge = intOrString(v)
		}
		if v, ok := ru["maxUnavailable"]; ok {
			unavailable = intOrString(v)
		}
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(&surge, int(total), true)
	if err != nil {
		return Budget{}, err
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&unavailable, int(total), false)
	if err != nil {
		return Budget{}, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return Budget{Surge: int32(s), Unavailable: int32(u)}, nil
}

func intOrString(v any) intstr.IntOrString {
	switch x := v.(type) {
	case int64:
		return intstr.FromInt32(int32(x))
	case float64:
		return intstr.FromInt32(int32(x))
	case string:
		return intstr.FromString(x)
	}
	return defaultBudget
}
