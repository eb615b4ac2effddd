package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/workload"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// steady is a member whose copy runs n replicas of revision rev.
func steady(name string, n int32, rev string) Member {
	return Member{Cluster: name, Replicas: n, Usable: true, HasCopy: true, Revision: rev, Observed: true,
		Generation: 2, ObservedGeneration: 2, SpecReplicas: n, Total: n, Updated: n, Available: n}
}

// held is a member whose copy holds revision rev on its n old pods.
func held(name string, n int32, rev string) Member {
	m := steady(name, n, rev)
	m.Updated = 0
	return m
}

// describe prints a plan as "a=Rolling(1/1) b=Waiting".
func describe(st *v1alpha1.RolloutStatus) string {
	var parts []string
	for _, c := range st.Clusters {
		s := c.Cluster + "=" + string(c.State)
		if c.MaxSurge+c.MaxUnavailable > 0 {
			s += fmt.Sprintf("(%d/%d)", c.MaxSurge, c.MaxUnavailable)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// plan builds a previous plan from "a=Rolling(1/1) b=Waiting" terms.
func plan(rev string, budget Budget, terms ...string) *v1alpha1.RolloutStatus {
	st := &v1alpha1.RolloutStatus{Revision: rev, MaxSurge: budget.Surge, MaxUnavailable: budget.Unavailable}
	for _, term := range terms {
		name, rest, _ := strings.Cut(term, "=")
		c := v1alpha1.ClusterRollout{Cluster: name}
		state, share, _ := strings.Cut(rest, "(")
		c.State = v1alpha1.RolloutState(state)
		if share != "" {
			fmt.Sscanf(share, "%d/%d)", &c.MaxSurge, &c.MaxUnavailable)
		}
		st.Clusters = append(st.Clusters, c)
	}
	return st
}

func TestPlan(t *testing.T) {
	b33 := Budget{Surge: 3, Unavailable: 3}
	tests := []struct {
		name string
		in   Input
		want string
	}{{
		name: "first plan of a new object: nothing held",
		in:   Input{Revision: "r1", Budget: b33, Members: []Member{{Cluster: "a", Replicas: 10, Usable: true}, steady("b", 10, "r1")}},
		want: "a=Rolling b=Done",
	}, {
		name: "a template change: three clusters of 10 share 3/3 one each",
		in: Input{Revision: "r2", Budget: b33, Previous: plan("r1", b33, "a=Done", "b=Done", "c=Done"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2"), held("c", 10, "r2")}},
		want: "a=Rolling(1/1) b=Rolling(1/1) c=Rolling(1/1)",
	}, {
		name: "shares follow the replicas after one unit each",
		in: Input{Revision: "r2", Budget: Budget{Surge: 6, Unavailable: 6}, Previous: plan("r1", b33, "a=Done", "b=Done", "c=Done"),
			Members: []Member{held("a", 20, "r2"), held("b", 5, "r2"), held("c", 5, "r2")}},
		want: "a=Rolling(4/4) b=Rolling(1/1) c=Rolling(1/1)",
	}, {
		name: "a budget smaller than the clusters: the first roll, the rest wait",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r1", b33, "a=Done", "b=Done", "c=Done"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2"), held("c", 10, "r2")}},
		want: "a=Rolling(0/1) b=Waiting c=Waiting",
	}, {
		name: "surge only: one unit of surge each",
		in: Input{Revision: "r2", Budget: Budget{Surge: 2, Unavailable: 0}, Previous: plan("r1", b33, "a=Done", "b=Done", "c=Done"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2"), held("c", 10, "r2")}},
		want: "a=Rolling(1/0) b=Rolling(1/0) c=Waiting",
	}, {
		name: "a finished cluster hands its share to the next",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting", "c=Waiting"),
			Members: []Member{steady("a", 10, "r2"), held("b", 10, "r2"), held("c", 10, "r2")}},
		want: "a=Done(0/1) b=Rolling(0/1) c=Waiting", // a keeps its share, uncounted: finishing writes nothing
	}, {
		name: "rolling shares are never cut, and nothing is admitted beyond them",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Rolling(2/2)", "b=Waiting"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2")}},
		want: "a=Rolling(2/2) b=Waiting",
	}, {
		name: "unavailable replicas elsewhere count against the budget",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 2}, Previous: plan("r1", b33, "a=Done", "b=Done"),
			Members: []Member{func() Member { m := held("a", 10, "r2"); m.Available = 8; return m }(), held("b", 10, "r2")}},
		want: "a=Waiting b=Waiting",
	}, {
		name: "paused host: nobody admitted, rolling keeps its share",
		in: Input{Revision: "r2", Budget: b33, Frozen: true, Previous: plan("r2", b33, "a=Rolling(1/1)", "b=Waiting"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2")}},
		want: "a=Rolling(1/1) b=Waiting",
	}, {
		name: "an unusable rolling cluster keeps its share until StallAfter, then gives it back",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Now: t0, StallAfter: time.Minute, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{{Cluster: "a", Replicas: 10, UnusableSince: t0.Add(-2 * time.Minute)}, held("b", 10, "r2")}},
		want: "a=Stalled b=Rolling(0/1)",
	}, {
		name: "within StallAfter the share stays",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Now: t0, StallAfter: time.Minute, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{{Cluster: "a", Replicas: 10, UnusableSince: t0.Add(-time.Second)}, held("b", 10, "r2")}},
		want: "a=Rolling(0/1) b=Waiting",
	}, {
		name: "a stalled cluster back waits for a share again",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Stalled", "b=Rolling(0/1)"),
			Members: []Member{held("a", 10, "r2"), held("b", 10, "r2")}},
		want: "a=Waiting b=Rolling(0/1)",
	}, {
		name: "a scale of a done cluster is no rollout",
		in: Input{Revision: "r2", Budget: b33, Previous: plan("r2", b33, "a=Done"),
			Members: []Member{func() Member { m := steady("a", 12, "r2"); m.SpecReplicas, m.Total, m.Updated = 12, 10, 10; return m }()}},
		want: "a=Done",
	}, {
		name: "a template change while rolling: the share carries over",
		in: Input{Revision: "r3", Budget: b33, Previous: plan("r2", b33, "a=Rolling(1/1)", "b=Done"),
			Members: []Member{held("a", 10, "r3"), held("b", 10, "r3")}},
		want: "a=Rolling(1/1) b=Rolling(2/2)",
	}, {
		name: "an empty cluster moves with a unit of surge",
		in: Input{Revision: "r2", Budget: Budget{Surge: 1, Unavailable: 1}, Previous: plan("r1", b33, "a=Done", "b=Done"),
			Members: []Member{func() Member { m := held("a", 0, "r2"); m.Total, m.SpecReplicas, m.Available = 0, 0, 0; return m }(), held("b", 10, "r2")}},
		want: "a=Done b=Rolling(1/1)",
	}, {
		name: "an unknown copy is not a new one: an unusable waiting cluster keeps waiting",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Now: t0, StallAfter: time.Minute, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{held("a", 10, "r2"), {Cluster: "b", Replicas: 10, UnusableSince: t0.Add(-2 * time.Minute)}}},
		want: "a=Rolling(0/1) b=Waiting",
	}, {
		name: "a member HPA's replicas: done by the copy's own count",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{func() Member {
				m := steady("a", 10, "r2")
				m.SpecReplicas, m.Total, m.Updated, m.Available = 14, 14, 14, 14
				return m
			}(), held("b", 10, "r2")}},
		want: "a=Done(0/1) b=Rolling(0/1)",
	}, {
		name: "no plan yet: a copy of another revision waits",
		in:   Input{Revision: "r2", Budget: b33, Members: []Member{held("a", 10, "r1"), held("b", 10, "")}},
		want: "a=Rolling(3/3) b=Rolling",
	}, {
		name: "a leaving cluster's share stays reserved while its copy is there",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{func() Member { m := held("a", 10, "r2"); m.Leaving = true; return m }(), held("b", 10, "r2")}},
		want: "a=Rolling(0/1) b=Waiting",
	}, {
		name: "admitted but not yet rewritten: not done, though its copy looks rolled out",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", b33, "a=Rolling(0/1)", "b=Waiting")
			p.Clusters[0].Generation = 2 // admitted at the generation the member has observed
			return p
		}(), Members: []Member{steady("a", 10, "r2"), held("b", 10, "r2")}},
		want: "a=Rolling(0/1) b=Waiting",
	}, {
		name: "a leaving cluster unusable past StallAfter stalls",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Now: t0, StallAfter: time.Minute, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Waiting"),
			Members: []Member{{Cluster: "a", Leaving: true, UnusableSince: t0.Add(-2 * time.Minute)}, held("b", 10, "r2")}},
		want: "a=Stalled b=Rolling(0/1)",
	}, {
		name: "suspended: nobody admitted, the others wait to be readmitted",
		in: Input{Revision: "r2", Budget: b33, Suspended: true, Previous: plan("r2", b33, "a=Rolling(1/1)", "b=Done", "c=Waiting"),
			Members: []Member{held("a", 10, "r2"), steady("b", 10, "r2"), held("c", 10, "r2")}},
		want: "a=Rolling(1/1) b=Waiting c=Waiting",
	}, {
		name: "a new copy whose template changed before it was done waits",
		in: Input{Revision: "r3", Budget: Budget{Surge: 0, Unavailable: 1}, Previous: plan("r2", b33, "a=Rolling(0/1)", "b=Rolling"),
			Members: []Member{held("a", 10, "r3"), held("b", 10, "r3")}},
		want: "a=Rolling(0/1) b=Waiting",
	}, {
		name: "a cluster new to the placement is created, not held",
		in: Input{Revision: "r2", Budget: b33, Previous: plan("r2", b33, "a=Done"),
			Members: []Member{steady("a", 5, "r2"), {Cluster: "b", Replicas: 5, Usable: true}}},
		want: "a=Done b=Rolling",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.in)
			if d := describe(got); d != tt.want {
				t.Errorf("Plan = %s, want %s", d, tt.want)
			}
			if got.Revision != tt.in.Revision || got.MaxSurge != tt.in.Budget.Surge || got.MaxUnavailable != tt.in.Budget.Unavailable {
				t.Errorf("plan header %s %d/%d, want the input's", got.Revision, got.MaxSurge, got.MaxUnavailable)
			}
			// A second pass over the same state changes nothing.
			again := tt.in
			again.Previous = got
			if d := describe(Plan(again)); d != tt.want {
				t.Errorf("second pass = %s, want the same plan %s", d, tt.want)
			}
		})
	}
}

func TestPlanKeepsSince(t *testing.T) {
	in := Input{Revision: "r2", Budget: Budget{Surge: 1, Unavailable: 1}, Now: t0, Previous: plan("r1", Budget{}, "a=Done"), Members: []Member{held("a", 10, "r2")}}
	first := Plan(in)
	in.Previous, in.Now = first, t0.Add(time.Minute)
	second := Plan(in)
	if !second.Clusters[0].Since.Equal(&first.Clusters[0].Since) || first.Clusters[0].State != v1alpha1.RolloutRolling {
		t.Errorf("Since %v then %v (state %s): want it kept while the state stays", first.Clusters[0].Since, second.Clusters[0].Since, first.Clusters[0].State)
	}
}

func TestFor(t *testing.T) {
	st := plan("r2", Budget{}, "a=Rolling(1/2)", "b=Waiting", "c=Done", "d=Rolling", "e=Stalled", "g=Done(1/1)")
	tests := []struct {
		cluster  string
		revision string
		hasCopy  bool
		want     string
	}{
		{"a", "r2", true, "share 1/2"},
		{"a", "r3", true, "share 1/2"}, // carries over a newer template
		{"b", "r2", true, "hold"},
		{"b", "r2", false, "as is"}, // never hold a copy being created
		{"c", "r2", true, "as is"},
		{"g", "r2", true, "share 1/1"}, // done, keeping the share it rolled with
		{"c", "r3", true, "hold"},      // the moment between a change and its plan
		{"d", "r2", true, "as is"},
		{"d", "r3", true, "hold"}, // a new copy's template changed: wait for the plan
		{"e", "r2", true, "hold"},
		{"f", "r2", true, "hold"},
		{"f", "r2", false, "as is"},
	}
	for _, tt := range tests {
		d := For(st, tt.revision, tt.cluster, tt.hasCopy, "r1")
		got := describeDirective(d)
		if got != tt.want || d.Revision != tt.revision {
			t.Errorf("For(%s, %s, copy %v) = %s (revision %s), want %s", tt.cluster, tt.revision, tt.hasCopy, got, d.Revision, tt.want)
		}
	}
	// Without a plan: only a copy labelled with another revision waits.
	for _, tt := range []struct {
		copyRevision, want string
	}{{"", "as is"}, {"r1", "as is"}, {"r0", "hold"}} {
		if got := describeDirective(For(nil, "r1", "a", true, tt.copyRevision)); got != tt.want {
			t.Errorf("For without a plan, copy of %q = %s, want %s", tt.copyRevision, got, tt.want)
		}
	}
}

func TestDeferred(t *testing.T) {
	st := plan("r1", Budget{}, "a=Done", "b=Rolling(1/1)", "c=Rolling")
	tests := []struct {
		st                    *v1alpha1.RolloutStatus
		cluster, copyRevision string
		known                 bool
		want                  bool
	}{
		{st, "a", "r1", true, true},                                 // the template changed to r2, no plan for it yet
		{st, "b", "r1", true, false},                                // rolling with a share: carries over
		{st, "c", "r1", true, true},                                 // a new copy's template changed
		{st, "a", "r2", true, false},                                // already holds r2 (held earlier)
		{st, "a", "r1", false, false},                               // unknown: For decides (holds)
		{nil, "a", "r1", true, true},                                // no plan at all, another revision
		{nil, "a", "", true, false},                                 // a copy from before federated rollouts
		{plan("r2", Budget{}, "a=Waiting"), "a", "r1", true, false}, // the plan is there
	}
	for _, tt := range tests {
		if got := Deferred(tt.st, "r2", tt.cluster, tt.known, tt.copyRevision); got != tt.want {
			t.Errorf("Deferred(%v, %s, known %v, copy %s) = %v, want %v", tt.st != nil, tt.cluster, tt.known, tt.copyRevision, got, tt.want)
		}
	}
}

func describeDirective(d Directive) string {
	switch {
	case d.Hold:
		return "hold"
	case d.Share != nil:
		return fmt.Sprintf("share %d/%d", d.Share.Surge, d.Share.Unavailable)
	}
	return "as is"
}

func deployment(strategy map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{}}}
	if strategy != nil {
		_ = unstructured.SetNestedMap(u.Object, strategy, "spec", "strategy")
	}
	return u
}

func TestResolve(t *testing.T) {
	tests := []struct {
		strategy map[string]any
		total    int32
		want     Budget
	}{
		{nil, 30, Budget{Surge: 8, Unavailable: 7}}, // 25%: up and down
		{map[string]any{"rollingUpdate": map[string]any{"maxSurge": int64(3), "maxUnavailable": int64(3)}}, 30, Budget{3, 3}},
		{map[string]any{"rollingUpdate": map[string]any{"maxSurge": "10%", "maxUnavailable": int64(0)}}, 30, Budget{3, 0}},
		{map[string]any{"rollingUpdate": map[string]any{"maxSurge": int64(0), "maxUnavailable": "10%"}}, 5, Budget{0, 1}}, // 0/0 allows one
	}
	for _, tt := range tests {
		got, err := Resolve(deployment(tt.strategy), tt.total)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%v, %d) = %+v, %v; want %+v", tt.strategy, tt.total, got, err, tt.want)
		}
	}
	if _, err := Resolve(deployment(map[string]any{"rollingUpdate": map[string]any{"maxSurge": "x%"}}), 10); err == nil {
		t.Error("Resolve of a bad percentage: no error")
	}
}

func TestGoverned(t *testing.T) {
	d := deployment(nil)
	if !Governed(d, true) || Governed(d, false) {
		t.Error("a divided Deployment is governed, a duplicated one not")
	}
	d.SetAnnotations(map[string]string{v1alpha1.AnnotationRollout: v1alpha1.RolloutPerMember})
	if Governed(d, true) {
		t.Error("per-member: not governed")
	}
	if Governed(deployment(map[string]any{"type": "Recreate"}), true) {
		t.Error("Recreate: not governed")
	}
	tests := []struct {
		name     string
		strategy map[string]any
		want     bool
	}{
		{"a StatefulSet rolling by default", nil, true},
		{"RollingUpdate", map[string]any{"type": "RollingUpdate"}, true},
		{"a partition of 0", map[string]any{"rollingUpdate": map[string]any{"partition": int64(0)}}, true},
		{"a partition set by hand: the user drives it", map[string]any{"rollingUpdate": map[string]any{"partition": int64(3)}}, false},
		{"OnDelete", map[string]any{"type": "OnDelete"}, false},
	}
	for _, tt := range tests {
		if got := Governed(statefulSet(tt.strategy), true); got != tt.want {
			t.Errorf("%s: Governed = %v, want %v", tt.name, got, tt.want)
		}
	}
	if Governed(statefulSet(nil), false) {
		t.Error("a duplicated StatefulSet is governed")
	}
}

// statefulSet is a StatefulSet template with spec.updateStrategy.
func statefulSet(strategy map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db"}, "spec": map[string]any{"replicas": int64(30)}}}
	if strategy != nil {
		_ = unstructured.SetNestedMap(u.Object, strategy, "spec", "updateStrategy")
	}
	return u
}

func TestResolveStatefulSet(t *testing.T) {
	tests := []struct {
		strategy map[string]any
		total    int32
		want     Budget
	}{
		{nil, 30, Budget{Unavailable: 1}}, // one at a time, never a surge
		{map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": int64(3)}}, 30, Budget{Unavailable: 3}},
		{map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": "10%"}}, 25, Budget{Unavailable: 3}},    // rounds up
		{map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": int64(0)}}, 30, Budget{Unavailable: 1}}, // at least one
	}
	for _, tt := range tests {
		got, err := Resolve(statefulSet(tt.strategy), tt.total)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(StatefulSet %v, %d) = %+v, %v; want %+v", tt.strategy, tt.total, got, err, tt.want)
		}
	}
}

func TestRevision(t *testing.T) {
	a := deployment(nil)
	_ = unstructured.SetNestedField(a.Object, "example.com/web:1", "spec", "template", "spec", "image")
	b := a.DeepCopy()
	_ = unstructured.SetNestedField(b.Object, int64(7), "spec", "replicas")
	c := a.DeepCopy()
	_ = unstructured.SetNestedField(c.Object, "example.com/web:2", "spec", "template", "spec", "image")
	if Revision(a) != Revision(b) || Revision(a) == Revision(c) || len(Revision(a)) != 16 {
		t.Errorf("revisions %s %s %s: want equal for a replicas change, different for a template change", Revision(a), Revision(b), Revision(c))
	}
}

func TestResolveCustomKind(t *testing.T) {
	wi, err := interpreters.Named("cloneset.apps.kruise.io")
	if err != nil {
		t.Fatal(err)
	}
	in, errs := interpreter.Compile(&wi.Spec, interpreter.Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	workload.Interpreters.Set(in)
	t.Cleanup(func() { workload.Interpreters.Remove(in.Kind()) })
	cs := func(strategy map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
			"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(30),
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1"}}}}}}}
		if strategy != nil {
			u.Object["spec"].(map[string]any)["updateStrategy"] = strategy
		}
		return u
	}
	tests := []struct {
		strategy map[string]any
		want     Budget
	}{
		{nil, Budget{Surge: 0, Unavailable: 6}}, // CloneSet's own defaults: 0 and 20%
		{map[string]any{"maxSurge": "10%", "maxUnavailable": "10%"}, Budget{3, 3}},
		{map[string]any{"maxSurge": int64(0), "maxUnavailable": int64(0)}, Budget{0, 1}},
	}
	for _, tt := range tests {
		tmpl := cs(tt.strategy)
		if !Kind(tmpl) || !Governed(tmpl, true) || Governed(tmpl, false) {
			t.Fatalf("a CloneSet with a rollout rule: Kind %t, Governed divided %t, undivided %t", Kind(tmpl), Governed(tmpl, true), Governed(tmpl, false))
		}
		got, err := Resolve(tmpl, 30)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%v) = %+v, %v; want %+v", tt.strategy, got, err, tt.want)
		}
	}
	if own := cs(map[string]any{"partition": int64(3)}); Governed(own, true) {
		t.Error("a CloneSet with a partition of its own is governed")
	}
	paused := cs(map[string]any{"paused": true})
	if !Paused(paused) {
		t.Error("a CloneSet with spec.updateStrategy.paused is not Paused")
	}
	a, b := cs(nil), cs(map[string]any{"maxUnavailable": int64(1)})
	if Revision(a) != Revision(b) {
		t.Error("a strategy change changed the revision")
	}
	c := cs(nil)
	c.Object["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:2"}}}}
	if Revision(a) == Revision(c) {
		t.Error("a template change kept the revision")
	}
}
