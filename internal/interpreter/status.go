package interpreter

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Member is one cluster's copy of an object as status aggregation sees
// it.
type Member struct {
	// Cluster is the MemberCluster's name.
	Cluster string
	// Object is the member's copy; nil when the member has none (yet).
	Object *unstructured.Unstructured
	// Current says whether the copy holds the template's current generation
	// (the caller knows this from its propagation records).
	Current bool
}

// Placeholder reasons of members without a condition to report.
const (
	reasonMissing     = "Missing"
	reasonNotReported = "NotReported"
)

// Aggregates reports whether the interpreter computes the host's status.
func (in *Interpreter) Aggregates() bool {
	return in.observed != nil || len(in.fields) > 0 || len(in.conditions) > 0
}

// AggregateStatus returns the host object's status computed from its
// members' copies: the template's current status with the fields, the
// observed generation and the conditions the rules name replaced. now
// stamps conditions whose status changed. The error is the first rule
// that failed; that field keeps the template's value.
func (in *Interpreter) AggregateStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (map[string]any, error) {
	status := map[string]any{}
	if cur, found, _ := unstructured.NestedFieldNoCopy(template.Object, "status"); found {
		if m, ok := cur.(map[string]any); ok {
			status = runtime.DeepCopyJSON(m)
		}
	}
	holder := map[string]any{"status": status}
	sorted := slices.Clone(members)
	slices.SortStableFunc(sorted, func(a, b Member) int { return cmp.Compare(a.Cluster, b.Cluster) })

	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	var vars map[string]any
	for _, f := range in.fields {
		var v any
		var err error
		switch f.aggregate {
		case v1alpha1.AggregateExpression:
			if vars == nil {
				vars = statusVars(template, sorted)
			}
			v, err = evalValue(f.expr, vars)
		default:
			v, err = aggregate(f.aggregate, f.path, sorted)
		}
		if err != nil {
			fail(err)
			continue
		}
		if v == nil {
			unstructured.RemoveNestedField(holder, f.path...)
			continue
		}
		if err := unstructured.SetNestedField(holder, v, f.path...); err != nil {
			fail(fmt.Errorf("set %s: %w", strings.Join(f.path, "."), err))
		}
	}
	if in.observed != nil && in.allObserved(sorted) {
		var gen any = template.GetGeneration()
		if writesGenerationAsText(sorted, in.observed) {
			gen = strconv.FormatInt(template.GetGeneration(), 10)
		}
		if err := unstructured.SetNestedField(holder, gen, in.observed...); err != nil {
			fail(fmt.Errorf("set %s: %w", strings.Join(in.observed, "."), err))
		}
	}
	if len(in.conditions) > 0 {
		old, _, _ := unstructured.NestedSlice(status, "conditions")
		conds := make([]any, 0, len(in.conditions))
		for _, c := range in.conditions {
			updateTime := in.conditionUpdateTime == schemaSays
			if in.conditionUpdateTime == schemaUnknown {
				updateTime = updateTimeIn(sorted, c.Type)
			}
			conds = append(conds, stampCondition(c.Type, conditionVerdict(c, sorted), old, now, updateTime))
		}
		status["conditions"] = conds
	}
	return status, first
}

// allObserved reports whether every member holds the current template and
// its controller has seen it (with no members there is nothing to wait
// for).
func (in *Interpreter) allObserved(members []Member) bool {
	for _, m := range members {
		if !m.Current || !in.Observed(m.Object) {
			return false
		}
	}
	return true
}

// writesGenerationAsText reports whether the members write their observed
// generation as a string: the host's must then be one too (the kind's
// schema says so).
func writesGenerationAsText(members []Member, path []string) bool {
	for _, m := range members {
		if m.Object == nil {
			continue
		}
		raw, _, _ := unstructured.NestedFieldNoCopy(m.Object.Object, path...)
		_, isText := raw.(string)
		return isText
	}
	return false
}

// statusVars are the variables of status expressions.
func statusVars(template *unstructured.Unstructured, members []Member) map[string]any {
	list := make([]any, len(members))
	for i, m := range members {
		var obj any
		if m.Object != nil {
			obj = m.Object.Object
		}
		list[i] = map[string]any{"cluster": m.Cluster, "object": obj, "current": m.Current}
	}
	return map[string]any{varTemplate: template.Object, varMembers: list}
}

// evalValue evaluates a status expression into a value to store.
func evalValue(p *program, vars map[string]any) (any, error) {
	out, err := p.eval(vars)
	if err != nil {
		return nil, err
	}
	v, err := native(out, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	return v, nil
}

// aggregate adds the members' values of path up.
func aggregate(how v1alpha1.StatusAggregate, path []string, members []Member) (any, error) {
	var values []any
	for _, m := range members {
		if m.Object == nil {
			continue
		}
		if v, found, _ := unstructured.NestedFieldNoCopy(m.Object.Object, path...); found && v != nil {
			values = append(values, v)
		}
	}
	switch how {
	case v1alpha1.AggregateSum, v1alpha1.AggregateMax, v1alpha1.AggregateMin:
		return numbers(how, path, values)
	case v1alpha1.AggregateFirst:
		if len(values) == 0 {
			return nil, nil
		}
		return runtime.DeepCopyJSONValue(values[0]), nil
	case v1alpha1.AggregateMerge:
		return merge(path, values)
	}
	return nil, fmt.Errorf("%s: aggregate %q is not known", strings.Join(path, "."), how)
}

// numbers sums or picks the extreme of integer or float values (Max and
// Min also of strings, compared as text: RFC 3339 times in UTC order so);
// a Sum of nothing is 0, a Max or Min of nothing is absent.
func numbers(how v1alpha1.StatusAggregate, path []string, values []any) (any, error) {
	if how != v1alpha1.AggregateSum && len(values) > 0 {
		if s, ok := texts(values); ok {
			if how == v1alpha1.AggregateMax {
				return slices.Max(s), nil
			}
			return slices.Min(s), nil
		}
	}
	var ints []int64
	var floats []float64
	for _, v := range values {
		switch n := v.(type) {
		case int64:
			ints = append(ints, n)
			floats = append(floats, float64(n))
		case float64:
			floats = append(floats, n)
		default:
			return nil, fmt.Errorf("%s: a member reports a %T, not a number", strings.Join(path, "."), v)
		}
	}
	isInt := len(ints) == len(floats)
	switch {
	case how == v1alpha1.AggregateSum && isInt:
		var sum int64
		for _, n := range ints {
			sum = addSaturating(sum, n)
		}
		return sum, nil
	case how == v1alpha1.AggregateSum:
		var sum float64
		for _, n := range floats {
			sum += n
		}
		return sum, nil
	case len(values) == 0:
		return nil, nil
	case isInt && how == v1alpha1.AggregateMax:
		return slices.Max(ints), nil
	case isInt:
		return slices.Min(ints), nil
	case how == v1alpha1.AggregateMax:
		return slices.Max(floats), nil
	}
	return slices.Min(floats), nil
}

// texts returns the values as strings when they all are.
func texts(values []any) ([]string, bool) {
	out := make([]string, 0, len(values))
	for _, v := range values {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// merge merges maps (the first member wins a key) or lists (concatenated
// without duplicates); nothing to merge is absent.
func merge(path []string, values []any) (any, error) {
	if len(values) == 0 {
		return nil, nil
	}
	switch values[0].(type) {
	case map[string]any:
		out := map[string]any{}
		for _, v := range values {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: members report a map and a %T", strings.Join(path, "."), v)
			}
			for k, x := range m {
				if _, taken := out[k]; !taken {
					out[k] = runtime.DeepCopyJSONValue(x)
				}
			}
		}
		return out, nil
	case []any:
		out := []any{}
		for _, v := range values {
			l, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: members report a list and a %T", strings.Join(path, "."), v)
			}
			for _, x := range l {
				if !slices.ContainsFunc(out, func(y any) bool { return equality.Semantic.DeepEqual(x, y) }) {
					out = append(out, runtime.DeepCopyJSONValue(x))
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: a member reports a %T, not a map or a list", strings.Join(path, "."), values[0])
}

// verdict is a computed condition before its timestamp.
type verdict struct {
	status, reason, message string
}

// conditionVerdict computes one host condition from the members' copies.
func conditionVerdict(c v1alpha1.StatusCondition, members []Member) verdict {
	var holding, holders []string
	firstReason := ""
	for _, m := range members {
		status, reason := memberCondition(m, c.Type)
		if status == "True" {
			holders = append(holders, m.Cluster)
			continue
		}
		if firstReason == "" {
			firstReason = reason
		}
		holding = append(holding, m.Cluster+": "+reason)
	}
	switch c.Aggregate {
	case v1alpha1.ConditionAnyTrue:
		if len(holders) > 0 {
			return verdict{"True", "TrueInSomeClusters", "True in " + strings.Join(holders, ", ")}
		}
		if len(holding) == 0 {
			return verdict{"False", "NoCluster", "no cluster holds a copy"}
		}
		return verdict{"False", "FalseInEveryCluster", strings.Join(holding, ", ")}
	default:
		if len(holding) == 0 {
			return verdict{"True", "TrueInEveryCluster", "True in every cluster"}
		}
		return verdict{"False", firstReason, strings.Join(holding, ", ")}
	}
}

// memberCondition returns a copy's condition status and a reason to list
// it under when it is not True.
func memberCondition(m Member, t string) (status, reason string) {
	if m.Object == nil {
		return "", reasonMissing
	}
	conds, _, _ := unstructured.NestedSlice(m.Object.Object, "status", "conditions")
	for _, raw := range conds {
		c, _ := raw.(map[string]any)
		if c["type"] != t {
			continue
		}
		status, _ = c["status"].(string)
		reason, _ = c["reason"].(string)
		switch {
		case reason != "":
		case status != "":
			reason = status
		default:
			reason = reasonNotReported
		}
		return status, reason
	}
	return "", reasonNotReported
}

// stampCondition builds the condition, keeping the previous condition's
// lastTransitionTime while its status stays the same. With updateTime it
// also carries lastUpdateTime (Deployment-style conditions, which some
// kinds' schemas require): now whenever status, reason or message
// changed, else the previous one.
func stampCondition(t string, v verdict, old []any, now metav1.Time, updateTime bool) map[string]any {
	stamp := now.UTC().Format(time.RFC3339)
	transition, update := stamp, stamp
	for _, raw := range old {
		c, _ := raw.(map[string]any)
		if c["type"] != t || c["status"] != v.status {
			continue
		}
		if prev, ok := c["lastTransitionTime"].(string); ok && prev != "" {
			transition = prev
		}
		if prev, ok := c["lastUpdateTime"].(string); ok && prev != "" && c["reason"] == nonEmpty(v.reason) && c["message"] == nonEmpty(v.message) {
			update = prev
		}
	}
	out := map[string]any{"type": t, "status": v.status, "lastTransitionTime": transition}
	if updateTime {
		out["lastUpdateTime"] = update
	}
	if v.reason != "" {
		out["reason"] = v.reason
	}
	if v.message != "" {
		out["message"] = v.message
	}
	return out
}

// nonEmpty is s, or nil when s is empty (as a field left out reads).
func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// updateTimeIn reports whether the members' conditions of type t carry a
// lastUpdateTime: without a schema, the conditions are shaped like theirs.
func updateTimeIn(members []Member, t string) bool {
	for _, m := range members {
		if m.Object == nil {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(m.Object.Object, "status", "conditions")
		for _, raw := range conds {
			if c, _ := raw.(map[string]any); c["type"] == t {
				if _, ok := c["lastUpdateTime"]; ok {
					return true
				}
			}
		}
	}
	return false
}

// addSaturating is a+b, held at int64's bounds instead of wrapping: a
// member (a pull agent's report among them) cannot turn a sum negative.
func addSaturating(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}
