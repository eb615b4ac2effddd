package interpreter

// This file tests the status rules: aggregated status, conditions and
// the aggregates rules compute.

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestAggregateStatus(t *testing.T) {
	in := compileShipped(t, "cloneset.apps.kruise.io")
	if !in.Aggregates() {
		t.Fatal("the CloneSet interpreter aggregates status")
	}
	template := cloneSet(t, 9, "")
	members := []Member{
		{Cluster: "member-2", Current: true, Object: cloneSet(t, 3, "{observedGeneration: 2, replicas: 3, readyReplicas: 2, availableReplicas: 2, updatedReplicas: 3, updatedReadyReplicas: 2, updateRevision: web-b, currentRevision: web-a, labelSelector: app=web}")},
		{Cluster: "member-1", Current: true, Object: cloneSet(t, 3, "{observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3, updatedReplicas: 3, updatedReadyReplicas: 3, updateRevision: web-b, currentRevision: web-b, labelSelector: app=web}")},
		{Cluster: "member-3", Current: true, Object: cloneSet(t, 3, "{observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3, updatedReplicas: 3, updatedReadyReplicas: 3, updateRevision: web-b, currentRevision: web-b}")},
	}
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	got, err := in.AggregateStatus(template, members, now)
	if err != nil {
		t.Fatal(err)
	}
	want := obj(t, `{observedGeneration: 2, replicas: 9, readyReplicas: 8, availableReplicas: 8, updatedReplicas: 9, updatedReadyReplicas: 8, expectedUpdatedReplicas: 0, updateRevision: web-b, currentRevision: web-a, labelSelector: app=web}`).Object
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("status:\n got %v\nwant %v", got, want)
	}

	// A member that has not seen the current template keeps the host's
	// observedGeneration where it was.
	template.Object["status"] = got
	template.SetGeneration(3)
	members[0].Current = false
	got, err = in.AggregateStatus(template, members, now)
	if err != nil {
		t.Fatal(err)
	}
	if g, _, _ := unstructured.NestedInt64(got, "observedGeneration"); g != 2 {
		t.Fatalf("observedGeneration = %d, want 2 while member-2 is behind", g)
	}
}

func TestAggregateConditions(t *testing.T) {
	spec := v1alpha1.WorkloadInterpreterSpec{
		Target: v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"},
		Status: &v1alpha1.StatusRule{Conditions: []v1alpha1.StatusCondition{
			{Type: "Available", Aggregate: v1alpha1.ConditionAllTrue},
			{Type: "Degraded", Aggregate: v1alpha1.ConditionAnyTrue},
		}},
	}
	in, errs := Compile(&spec, Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	member := func(cluster, conds string) Member {
		return Member{Cluster: cluster, Current: true, Object: obj(t, "status: {conditions: "+conds+"}")}
	}
	t0 := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	template := obj(t, "kind: Thing")
	members := []Member{
		member("b", "[{type: Available, status: 'False', reason: NoPods}]"),
		member("a", "[{type: Available, status: 'True'}, {type: Degraded, status: 'True', reason: Slow}]"),
		{Cluster: "c"},
	}
	got, err := in.AggregateStatus(template, members, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := obj(t, `{conditions: [
  {type: Available, status: 'False', reason: NoPods, message: 'b: NoPods, c: Missing', lastTransitionTime: '2026-11-25T12:00:00Z'},
  {type: Degraded, status: 'True', reason: TrueInSomeClusters, message: 'True in a', lastTransitionTime: '2026-11-25T12:00:00Z'}]}`).Object
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("status:\n got %v\nwant %v", got, want)
	}
	// Later, with Available True everywhere: its transition time moves,
	// Degraded's does not.
	template.Object["status"] = got
	members[0] = member("b", "[{type: Available, status: 'True'}]")
	members[2] = member("c", "[{type: Available, status: 'True'}]")
	got, err = in.AggregateStatus(template, members, t1)
	if err != nil {
		t.Fatal(err)
	}
	want = obj(t, `{conditions: [
  {type: Available, status: 'True', reason: TrueInEveryCluster, message: 'True in every cluster', lastTransitionTime: '2026-11-25T12:01:00Z'},
  {type: Degraded, status: 'True', reason: TrueInSomeClusters, message: 'True in a', lastTransitionTime: '2026-11-25T12:00:00Z'}]}`).Object
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("status:\n got %v\nwant %v", got, want)
	}
}

func TestAggregates(t *testing.T) {
	values := func(vs ...string) []Member {
		var out []Member
		for i, v := range vs {
			out = append(out, Member{Cluster: string(rune('a' + i)), Object: obj(t, "status: {v: "+v+"}")})
		}
		return out
	}
	cases := []struct {
		how     v1alpha1.StatusAggregate
		members []Member
		want    string
	}{
		{v1alpha1.AggregateSum, values("1", "2", "3"), "6"},
		{v1alpha1.AggregateSum, values("1", "2.5"), "3.5"},
		{v1alpha1.AggregateSum, nil, "0"},
		{v1alpha1.AggregateMax, values("1", "7", "3"), "7"},
		{v1alpha1.AggregateMin, values("4", "7", "3"), "3"},
		{v1alpha1.AggregateMin, nil, "null"},
		{v1alpha1.AggregateMin, values("'2026-11-25T12:00:00Z'", "'2026-11-24T12:00:00Z'"), "'2026-11-24T12:00:00Z'"},
		{v1alpha1.AggregateFirst, values("x", "y"), "x"},
		{v1alpha1.AggregateMerge, values("{a: 1, b: 2}", "{b: 3, c: 4}"), "{a: 1, b: 2, c: 4}"},
		{v1alpha1.AggregateMerge, values("[1, 2]", "[2, 3]"), "[1, 2, 3]"},
	}
	for _, tc := range cases {
		t.Run(string(tc.how)+" "+tc.want, func(t *testing.T) {
			got, err := aggregate(tc.how, []string{"status", "v"}, tc.members)
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := yaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if w, ok := want.(float64); ok && w == float64(int64(w)) && tc.want != "3.5" {
				want = int64(w)
			}
			if !equality.Semantic.DeepEqual(normalise(got), normalise(want)) {
				t.Fatalf("got %#v, want %#v", got, want)
			}
		})
	}
	if _, err := aggregate(v1alpha1.AggregateSum, []string{"status", "v"}, values("1", "x")); err == nil {
		t.Fatal("a sum of a string must fail")
	}
}

// normalise turns the numbers of a decoded YAML value into int64 where
// whole, as unstructured objects hold them.
func normalise(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalise(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalise(e)
		}
	}
	return v
}

// Sums of integers saturate at int64's bounds instead of wrapping.
func TestSumSaturates(t *testing.T) {
	tests := []struct {
		values []any
		want   int64
	}{
		{[]any{int64(2), int64(3)}, 5},
		{[]any{int64(math.MaxInt64), int64(1)}, math.MaxInt64},
		{[]any{int64(math.MaxInt64 - 1), int64(math.MaxInt64 - 1)}, math.MaxInt64},
		{[]any{int64(math.MinInt64), int64(-1)}, math.MinInt64},
		{[]any{int64(math.MaxInt64), int64(math.MinInt64)}, -1},
	}
	for _, tt := range tests {
		got, err := numbers(v1alpha1.AggregateSum, []string{"replicas"}, tt.values)
		if err != nil || got != tt.want {
			t.Errorf("sum of %v = %v (%v), want %d", tt.values, got, err, tt.want)
		}
	}
}
