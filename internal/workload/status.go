package workload

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	stdmaps "maps"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Member is one cluster's copy of an object as the status aggregation sees
// it.
type Member = interpreter.Member

// statusFunc computes one kind's host status. prev is the template's
// status decoded into the kind's status type (nil when it does not
// decode); next is the computed status of the same type. Members come in
// cluster-name order.
type statusFunc func(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any)

// statusFuncs are the kinds whose status has a multi-cluster meaning.
var statusFuncs = map[schema.GroupKind]statusFunc{
	{Group: "apps", Kind: "Deployment"}:  deploymentStatus,
	{Group: "apps", Kind: "StatefulSet"}: statefulSetStatus,
	{Group: "apps", Kind: "DaemonSet"}:   daemonSetStatus,
	{Group: "apps", Kind: "ReplicaSet"}:  replicaSetStatus,
	{Group: "batch", Kind: "Job"}:        jobStatus,
	{Group: "", Kind: "Service"}:         serviceStatus,
}

// AggregateStatus returns the host object's status computed from its
// member copies, and whether it differs from the template's current status
// (changed=false means: write nothing). Kinds without multi-cluster status
// meaning return (nil, false).
//
// now stamps conditions whose status changed; unchanged conditions keep
// the template's timestamps, so an unchanged situation always gives
// changed=false (no write churn). The status has the shape the apiserver
// returns (int64 numbers, RFC 3339 times, zero fields omitted as the
// kind's JSON tags say), so it compares equal to the template read back
// after it was written. A member copy whose status does not decode counts
// as one without status that has not observed its generation.
func AggregateStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (status map[string]any, changed bool) {
	status, changed, _ = AggregateStatusOf(template, members, now)
	return status, changed
}

// AggregateStatusOf is AggregateStatus that also returns the first status
// rule of the kind's WorkloadInterpreter that failed on this object (an
// expression reading a field the object does not have, a member reporting
// text where a number is summed): that field keeps the template's value.
// Built-in kinds return no rule error.
func AggregateStatusOf(template *unstructured.Unstructured, members []Member, now metav1.Time) (status map[string]any, changed bool, ruleErr error) {
	if template == nil {
		return nil, false, nil
	}
	compute, ok := statusFuncs[template.GroupVersionKind().GroupKind()]
	if !ok {
		return interpreted(template, members, now)
	}
	sorted := slices.Clone(members)
	slices.SortStableFunc(sorted, func(a, b Member) int { return cmp.Compare(a.Cluster, b.Cluster) })

	prev, next := compute(template, sorted, now.Rfc3339Copy())
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(next)
	if err != nil {
		return nil, false, nil
	}
	current, found, _ := unstructured.NestedFieldNoCopy(template.Object, "status")
	if !found {
		current = nil
	}
	if prev != nil {
		if normalised, err := runtime.DefaultUnstructuredConverter.ToUnstructured(prev); err == nil {
			current = normalised
		}
	}
	if currentMap, isMap := current.(map[string]any); isMap && equality.Semantic.DeepEqual(status, currentMap) {
		return status, false, nil
	}
	return status, true, nil
}

// fromDefinition computes the status fields the kind's built-in
// definition names (counts, revisions, the observed generation) into a
// fresh S: nothing else of the template's status is carried over, and
// observed is the host's observed generation until every member has seen
// the template's.
func fromDefinition[S any](template *unstructured.Unstructured, members []Member, now metav1.Time, observed int64) S {
	var out S
	in := builtins[template.GroupVersionKind().GroupKind()]
	if in == nil {
		return out
	}
	t := &unstructured.Unstructured{Object: stdmaps.Clone(template.Object)}
	t.Object["status"] = map[string]any{"observedGeneration": observed}
	status, _ := in.AggregateStatus(t, members, now) // a failing rule leaves its field zero
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(status, &out)
	return out
}

// decodeStatus decodes obj's .status into into; an object without status
// leaves into unchanged.
func decodeStatus(obj *unstructured.Unstructured, into any) error {
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, "status")
	if err != nil {
		return fmt.Errorf("reading status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if !found || raw == nil {
		return nil
	}
	m, isMap := raw.(map[string]any)
	if !isMap {
		return fmt.Errorf("status of %s %s is a %T, not an object", obj.GetKind(), obj.GetName(), raw)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, into); err != nil {
		return fmt.Errorf("decoding status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// templateStatus decodes the template's status into a zero S. prev is the
// decoded status, or nil when it does not decode; old is the decoded status
// or the zero value.
func templateStatus[S any](template *unstructured.Unstructured) (prev any, old S) {
	if err := decodeStatus(template, &old); err != nil {
		var zero S
		return nil, zero
	}
	return &old, old
}

// memberStatus is one member with its copy's status decoded.
type memberStatus[S any] struct {
	Member
	// status is the copy's decoded status; zero when there is no copy or it
	// does not decode.
	status S
	// valid says the member has a copy and its status decoded.
	valid bool
}

// decodeMembers decodes the members' statuses into S.
func decodeMembers[S any](members []Member) []memberStatus[S] {
	out := make([]memberStatus[S], len(members))
	for i, m := range members {
		out[i].Member = m
		if m.Object == nil {
			continue
		}
		var s S
		if err := decodeStatus(m.Object, &s); err == nil {
			out[i].status, out[i].valid = s, true
		}
	}
	return out
}

// observedGeneration returns the host's status.observedGeneration: the
// template's generation when every member holds it (Current) and has
// observed its copy's generation, else the template's previous value.
// With no members there is nothing to wait for.
func observedGeneration[S any](template *unstructured.Unstructured, previous int64, members []memberStatus[S], observed func(S) int64) int64 {
	for _, m := range members {
		if !m.upToDate(observed(m.status)) {
			return previous
		}
	}
	return template.GetGeneration()
}

// upToDate reports whether the member's copy holds the template's current
// generation and the member's controller has observed it (observed is the
// copy's status.observedGeneration).
func (m memberStatus[S]) upToDate(observed int64) bool {
	return m.valid && m.Current && observed >= m.Object.GetGeneration()
}

// addCount adds an optional count to an optional sum; the sum stays nil
// while no member reports the count.
func addCount(sum, v *int32) *int32 {
	if v == nil {
		return sum
	}
	total := *v
	if sum != nil {
		total = addInt32(total, *sum)
	}
	return &total
}

// addInt32 adds two counts, saturating at the int32 range rather than
// wrapping: members (a pull agent's report among them) cannot turn a sum
// negative, which the host would refuse in every later status write.
func addInt32(a, b int32) int32 {
	return int32(max(math.MinInt32, min(math.MaxInt32, int64(a)+int64(b))))
}

// Aggregated reports whether the host status of obj's kind is aggregated
// from its member copies.
func Aggregated(obj *unstructured.Unstructured) bool {
	if _, ok := statusFuncs[obj.GroupVersionKind().GroupKind()]; ok {
		return true
	}
	in := interpreterOf(obj)
	return in != nil && in.Aggregates()
}

// interpreted is AggregateStatusOf for a kind with a WorkloadInterpreter:
// a rule that fails leaves its field as the template has it, and is
// returned.
func interpreted(template *unstructured.Unstructured, members []Member, now metav1.Time) (map[string]any, bool, error) {
	in := interpreterOf(template)
	if in == nil || !in.Aggregates() {
		return nil, false, nil
	}
	status, ruleErr := in.AggregateStatus(template, members, now.Rfc3339Copy())
	current, _, _ := unstructured.NestedFieldNoCopy(template.Object, "status")
	if m, ok := current.(map[string]any); ok && (equality.Semantic.DeepEqual(status, m) || sameJSON(status, m)) {
		return status, false, ruleErr
	}
	if current == nil && len(status) == 0 {
		return status, false, ruleErr
	}
	return status, true, ruleErr
}

// sameJSON reports whether a and b encode to the same JSON: a rule's sum
// of numbers with fractions is a float64 (1.0), which the apiserver hands
// back as the int64 1; they are the same status.
func sameJSON(a, b map[string]any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
