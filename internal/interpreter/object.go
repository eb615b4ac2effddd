package interpreter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// HasReplicas reports whether the kind has a replica count to divide.
func (in *Interpreter) HasReplicas() bool { return in.hasReplicas }

// Replicas returns obj's desired replicas: the field at the replicas
// path, or the rule's default when the field is absent. ok is false when
// the kind has no replicas or the field is not a count.
func (in *Interpreter) Replicas(obj *unstructured.Unstructured) (replicas int32, ok bool) {
	if !in.hasReplicas || obj == nil {
		return 0, false
	}
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, in.replicas...)
	if err != nil {
		return 0, false
	}
	if !found || raw == nil {
		return in.defaultReplicas, true
	}
	n, isInt := raw.(int64)
	if !isInt || n < 0 || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// SetReplicas writes n at the replicas path.
func (in *Interpreter) SetReplicas(obj *unstructured.Unstructured, n int32) error {
	if !in.hasReplicas {
		return fmt.Errorf("%s has no replicas", in.kind)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(n), in.replicas...); err != nil {
		return fmt.Errorf("set %s: %w", strings.Join(in.replicas, "."), err)
	}
	return nil
}

// PodSpecPath is the path of the pod spec in the kind's objects (the pod
// template's spec), or nil when the kind has no pod template.
func (in *Interpreter) PodSpecPath() []string {
	if in.podTemplate == nil {
		return nil
	}
	return append(slices.Clip(in.podTemplate), "spec")
}

// Selector returns obj's pod selector. ok is false without a selector
// rule, and for a selector that is missing, invalid or empty (which would
// match every pod in the namespace).
func (in *Interpreter) Selector(obj *unstructured.Unstructured) (selector labels.Selector, ok bool) {
	if in.selector == nil || obj == nil {
		return nil, false
	}
	m, found, err := unstructured.NestedMap(obj.Object, in.selector...)
	if !found || err != nil {
		return nil, false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, false
	}
	selector, err = metav1.LabelSelectorAsSelector(&ls)
	if err != nil || selector.Empty() {
		return nil, false
	}
	return selector, true
}

// Retain lists the fields a member copy keeps its own value of.
func (in *Interpreter) Retain() [][]string { return in.retain }

// Observed reports whether a member's copy has been seen by its
// controller at its current generation (the status's observed-generation
// field is at least the copy's generation). Without an observed
// generation rule every copy counts as observed.
func (in *Interpreter) Observed(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	if in.observed == nil {
		return true
	}
	n, ok := generationAt(obj.Object, in.observed)
	return ok && n >= obj.GetGeneration()
}

// generationAt reads a generation: an integer, or an integer written as a
// string (Argo Rollouts writes its observedGeneration so).
func generationAt(obj map[string]any, path []string) (int64, bool) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if !found || err != nil {
		return 0, false
	}
	switch v := raw.(type) {
	case int64:
		return v, true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Migratable reports whether application failover can move the kind's
// replicas: it needs replicas, a pod selector and the ready and existing
// pod counts.
func (in *Interpreter) Migratable() bool {
	return in.hasReplicas && in.selector != nil && in.readyReplicas != nil && in.pods != nil
}

// ReadyReplicas returns the ready pods of a member's copy. ok is false
// without the health rule, until the copy is Observed, and when the
// expression fails (the error says why).
func (in *Interpreter) ReadyReplicas(obj *unstructured.Unstructured) (n int32, ok bool, err error) {
	return in.count(in.readyReplicas, obj)
}

// Pods returns the pods of a member's copy that exist, ready or not, with
// ReadyReplicas' rules for ok.
func (in *Interpreter) Pods(obj *unstructured.Unstructured) (n int32, ok bool, err error) {
	return in.count(in.pods, obj)
}

// count evaluates a count expression on an observed copy.
func (in *Interpreter) count(p *program, obj *unstructured.Unstructured) (int32, bool, error) {
	if p == nil || !in.Observed(obj) {
		return 0, false, nil
	}
	n, err := p.evalInt32(map[string]any{varObject: obj.Object})
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// JudgesReadiness reports whether the interpreter has a ready expression.
func (in *Interpreter) JudgesReadiness() bool { return in.ready != nil }

// Health is a member copy's health as the interpreter judges it; nil
// fields are unknown (no expression, or it failed).
type Health struct {
	Ready, Progressing, Failed *bool
}

// Health judges a member's copy. The error is the first expression that
// failed; the other answers are still given.
func (in *Interpreter) Health(obj *unstructured.Unstructured) (Health, error) {
	var h Health
	var first error
	if obj == nil {
		return h, nil
	}
	vars := map[string]any{varObject: obj.Object}
	for _, q := range []struct {
		p   *program
		out **bool
	}{{in.ready, &h.Ready}, {in.progressing, &h.Progressing}, {in.failed, &h.Failed}} {
		if q.p == nil {
			continue
		}
		b, err := q.p.evalBool(vars)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		*q.out = &b
	}
	return h, first
}

// followerKinds are the kinds an expression may name as followers.
var followerKinds = []string{"ConfigMap", "Secret", "ServiceAccount", "PersistentVolumeClaim"}

// Followers returns the extra followers the followers expression names
// for obj (nil without one).
func (in *Interpreter) Followers(obj *unstructured.Unstructured) ([]v1alpha1.ObjectReference, error) {
	if in.followers == nil || obj == nil {
		return nil, nil
	}
	out, err := in.followers.eval(map[string]any{varObject: obj.Object})
	if err != nil {
		return nil, err
	}
	v, err := native(out, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.followers.path, err)
	}
	list, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("%s: evaluated to %T, not a list", in.followers.path, v)
	}
	var refs []v1alpha1.ObjectReference
	for i, item := range list {
		m, _ := item.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		switch {
		case m == nil:
			return nil, fmt.Errorf("%s: item %d is not a {kind, name} map", in.followers.path, i)
		case !slices.Contains(followerKinds, kind):
			return nil, fmt.Errorf("%s: item %d: kind %q is not one of %v", in.followers.path, i, kind, followerKinds)
		case name == "":
			return nil, fmt.Errorf("%s: item %d: no name", in.followers.path, i)
		}
		refs = append(refs, v1alpha1.ObjectReference{Kind: kind, Name: name})
	}
	return refs, nil
}

// ReplicasPath is the path of the replica count; nil without replicas.
func (in *Interpreter) ReplicasPath() []string { return in.replicas }
