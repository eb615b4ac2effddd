package interpreter

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// cloneSetSchema is the structural schema of the CloneSet stand-in CRD.
func cloneSetSchema(t testing.TB) *structuralschema.Structural {
	t.Helper()
	crd, err := crds.CloneSet()
	if err != nil {
		t.Fatal(err)
	}
	s, err := SchemaOf(crd)
	if err != nil || s == nil {
		t.Fatalf("schema: %v (nil: %v)", err, s == nil)
	}
	return s
}

// shipped returns the shipped interpreter of that name.
func shipped(t testing.TB, name string) *v1alpha1.WorkloadInterpreter {
	t.Helper()
	wi, err := interpreters.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	return wi
}

// obj decodes a YAML object.
func obj(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		// Not a whole object (no kind): decode the map alone.
		u.Object = map[string]any{}
		if err := json.Unmarshal(raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.Object = normalise(u.Object).(map[string]any)
	}
	return u
}

func TestShippedInterpretersCompile(t *testing.T) {
	all, err := interpreters.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no shipped interpreters")
	}
	for _, wi := range all {
		if _, errs := Compile(&wi.Spec, Options{}); len(errs) > 0 {
			t.Errorf("%s: %v", wi.Name, errs.ToAggregate())
		}
		// Every shipped interpreter is also checked against its kind's
		// CRD (the project's own or a stand-in of the same shape).
		crd, err := crds.For(wi.Spec.Target.Group, wi.Spec.Target.Kind)
		if err != nil || crd == nil {
			t.Errorf("%s: no CRD in test/workloads/crds to check it against (%v)", wi.Name, err)
			continue
		}
		s, err := SchemaOf(crd)
		if err != nil || s == nil {
			t.Errorf("%s: schema of %s: %v", wi.Name, crd.Name, err)
			continue
		}
		if _, errs := Compile(&wi.Spec, Options{Schema: s}); len(errs) > 0 {
			t.Errorf("%s against the schema of %s: %v", wi.Name, crd.Name, errs.ToAggregate())
		}
	}
}

func TestCompileRefusesBadSpecs(t *testing.T) {
	base := func() v1alpha1.WorkloadInterpreterSpec {
		return *shipped(t, "cloneset.apps.kruise.io").Spec.DeepCopy()
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.WorkloadInterpreterSpec)
		typed  bool
		want   string
	}{
		{"syntax", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Health.Ready = "object.status.(" }, false,
			"spec.health.ready: Invalid value"},
		{"misspelt field", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Health.Ready = "object.status.redyReplicas > 0" }, true,
			"undefined field 'redyReplicas'"},
		{"misspelt field without a schema compiles", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Health.Ready = "object.status.redyReplicas > 0" }, false,
			""},
		{"not a bool", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Health.Ready = "'yes'" }, false,
			"must evaluate to bool, not string"},
		{"count not an int", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Health.Pods = "object.status.updateRevision" }, true,
			"spec.health.pods"},
		{"replicas path not in the schema", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Replicas.Path = "spec.replica" }, true,
			`spec.replicas.path: Invalid value: "spec.replica": the kind's schema has no field "replica" here`},
		{"replicas path not an integer", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Replicas.Path = "spec.updateStrategy.type" }, true,
			"not integer"},
		{"status field outside status", func(s *v1alpha1.WorkloadInterpreterSpec) {
			s.Status.Fields = append(s.Status.Fields, v1alpha1.StatusField{Path: "spec.replicas", Aggregate: v1alpha1.AggregateSum})
		}, false, "must be a field under status"},
		{"sum of a string", func(s *v1alpha1.WorkloadInterpreterSpec) {
			s.Status.Fields = append(s.Status.Fields, v1alpha1.StatusField{Path: "status.updateRevision", Aggregate: v1alpha1.AggregateSum})
		}, true, "not number"},
		{"max of a list", func(s *v1alpha1.WorkloadInterpreterSpec) {
			s.Status.Fields = append(s.Status.Fields, v1alpha1.StatusField{Path: "status.conditions", Aggregate: v1alpha1.AggregateMax})
		}, true, "not scalar"},
		{"over the cost budget", func(s *v1alpha1.WorkloadInterpreterSpec) {
			s.Health.Ready = "object.status.conditions.all(c, object.status.conditions.all(d, object.status.conditions.all(e, c.type != d.type || d.type != e.type)))"
		}, true, "exceeds the budget"},
		{"retaining metadata", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Retain = []v1alpha1.FieldPath{"metadata.labels"} }, false,
			"spec.retain[0]: Invalid value: \"metadata.labels\": must not be under metadata"},
		{"observed generation outside status", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Status.ObservedGeneration.Path = "metadata.generation" }, false,
			"spec.status.observedGeneration.path"},
		{"followers not a list", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Followers = "1" }, false,
			"must evaluate to list(dyn)"},
		{"rollout without replicas", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Replicas = nil }, false,
			"rollout needs replicas and podTemplate"},
		{"rollout paused not a boolean", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.Paused = "spec.updateStrategy.type" }, true,
			"spec.rollout.paused"},
		{"rollout paused missing", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.Paused = "" }, false,
			"spec.rollout.paused: Required value"},
		{"rollout field outside spec", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.MaxSurge = "status.replicas" }, false,
			"spec.rollout.maxSurge: Invalid value: \"status.replicas\": must be a field under spec"},
		{"rollout budget not int-or-string", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.MaxUnavailable = "spec.updateStrategy.paused" }, true,
			"spec.rollout.maxUnavailable"},
		{"rollout field retained", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Retain = []v1alpha1.FieldPath{"spec.updateStrategy"} }, false,
			"overlaps the rollout rule's paused field"},
		// Flotilla writes the rule's fields: one that names the replicas
		// would set every copy's replicas to its share of the budget.
		{"rollout budget on the replicas", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.MaxUnavailable = "spec.replicas" }, true,
			`spec.rollout.maxUnavailable: Invalid value: "spec.replicas": overlaps the replicas field spec.replicas`},
		{"rollout field in the pod template", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.Paused = "spec.template.spec.hostNetwork" }, false,
			"overlaps the podTemplate field spec.template"},
		{"rollout fields on one another", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.Partition = s.Rollout.MaxSurge }, false,
			"spec.rollout.partition: Invalid value: \"spec.updateStrategy.maxSurge\": overlaps the rollout rule's maxSurge field"},
		{"rollout default not a percentage", func(s *v1alpha1.WorkloadInterpreterSpec) {
			v := intstr.FromString("lots")
			s.Rollout.DefaultMaxUnavailable = &v
		}, false, "spec.rollout.defaultMaxUnavailable"},
		{"rollout budget a plain string", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.MaxSurge = "spec.updateStrategy.type" }, true,
			"spec.rollout.maxSurge"},
		{"rollout count not an int", func(s *v1alpha1.WorkloadInterpreterSpec) { s.Rollout.UpdatedReplicas = "object.status.updateRevision" }, true,
			"spec.rollout.updatedReplicas"},
		{"template path in preserved fields is not checked", func(s *v1alpha1.WorkloadInterpreterSpec) { s.PodTemplate.Path = "spec.template.spec" }, true,
			""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := base()
			tc.change(&spec)
			var opts Options
			if tc.typed {
				opts.Schema = cloneSetSchema(t)
			}
			in, errs := Compile(&spec, opts)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs.ToAggregate())
			case tc.want == "":
				if in == nil {
					t.Fatal("no interpreter")
				}
			case len(errs) == 0:
				t.Fatalf("accepted; want an error with %q", tc.want)
			case !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Fatalf("error %q does not contain %q", errs.ToAggregate(), tc.want)
			}
		})
	}
}

// cloneSet is a member copy of a CloneSet with the given status.
func cloneSet(t testing.TB, replicas int, status string) *unstructured.Unstructured {
	t.Helper()
	o := obj(t, `
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: web, namespace: demo, generation: 2}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
`)
	if replicas >= 0 {
		if err := unstructured.SetNestedField(o.Object, int64(replicas), "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
	}
	if status != "" {
		o.Object["status"] = obj(t, status).Object
	}
	return o
}

func compileShipped(t testing.TB, name string) *Interpreter {
	t.Helper()
	in, errs := Compile(&shipped(t, name).Spec, Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return in
}

func TestReplicas(t *testing.T) {
	in := compileShipped(t, "cloneset.apps.kruise.io")
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want int32
		ok   bool
	}{
		{"set", cloneSet(t, 9, ""), 9, true},
		{"zero", cloneSet(t, 0, ""), 0, true},
		{"absent takes the default", cloneSet(t, -1, ""), 1, true},
		{"not a count", obj(t, "kind: CloneSet\nspec: {replicas: many}"), 0, false},
		{"negative", obj(t, "kind: CloneSet\nspec: {replicas: -3}"), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := in.Replicas(tc.obj)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Replicas = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	o := cloneSet(t, 9, "")
	if err := in.SetReplicas(o, 3); err != nil {
		t.Fatal(err)
	}
	if n, _ := in.Replicas(o); n != 3 {
		t.Fatalf("after SetReplicas(3): %d", n)
	}
	if got := strings.Join(in.PodSpecPath(), "."); got != "spec.template.spec" {
		t.Fatalf("PodSpecPath = %s", got)
	}
	sel, ok := in.Selector(o)
	if !ok || sel.String() != "app=web" {
		t.Fatalf("Selector = %v, %v", sel, ok)
	}
	if !in.Migratable() {
		t.Fatal("a CloneSet is migratable")
	}
}

func TestHealthAndCounts(t *testing.T) {
	in := compileShipped(t, "cloneset.apps.kruise.io")
	cases := []struct {
		name        string
		obj         *unstructured.Unstructured
		ready       *bool
		readyPods   int32
		pods        int32
		countsKnown bool
	}{
		{"all ready", cloneSet(t, 3, "{observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReadyReplicas: 3}"), ptr.To(true), 3, 3, true},
		{"updating", cloneSet(t, 3, "{observedGeneration: 2, replicas: 4, readyReplicas: 3, updatedReadyReplicas: 1}"), ptr.To(false), 3, 4, true},
		{"not observed yet", cloneSet(t, 3, "{observedGeneration: 1, replicas: 3, readyReplicas: 3, updatedReadyReplicas: 3}"), ptr.To(true), 0, 0, false},
		{"no status", cloneSet(t, 3, ""), ptr.To(false), 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := in.Health(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if (h.Ready == nil) != (tc.ready == nil) || h.Ready != nil && *h.Ready != *tc.ready {
				t.Fatalf("Ready = %v, want %v", h.Ready, tc.ready)
			}
			ready, ok, err := in.ReadyReplicas(tc.obj)
			if err != nil || ok != tc.countsKnown || ready != tc.readyPods {
				t.Fatalf("ReadyReplicas = %d, %v, %v; want %d, %v", ready, ok, err, tc.readyPods, tc.countsKnown)
			}
			pods, ok, err := in.Pods(tc.obj)
			if err != nil || ok != tc.countsKnown || pods != tc.pods {
				t.Fatalf("Pods = %d, %v, %v; want %d, %v", pods, ok, err, tc.pods, tc.countsKnown)
			}
		})
	}
}

func TestFollowers(t *testing.T) {
	spec := v1alpha1.WorkloadInterpreterSpec{
		Target:    v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"},
		Followers: "has(object.spec.configRef) ? [{'kind': 'ConfigMap', 'name': string(object.spec.configRef)}] : []",
	}
	in, errs := Compile(&spec, Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	refs, err := in.Followers(obj(t, "spec: {configRef: settings}"))
	if err != nil || len(refs) != 1 || refs[0] != (v1alpha1.ObjectReference{Kind: "ConfigMap", Name: "settings"}) {
		t.Fatalf("Followers = %v, %v", refs, err)
	}
	if refs, err := in.Followers(obj(t, "spec: {}")); err != nil || len(refs) != 0 {
		t.Fatalf("Followers of an object without a reference = %v, %v", refs, err)
	}
	spec.Followers = "[{'kind': 'Pod', 'name': 'x'}]"
	in, _ = Compile(&spec, Options{})
	if _, err := in.Followers(obj(t, "spec: {}")); err == nil || !strings.Contains(err.Error(), `kind "Pod" is not one of`) {
		t.Fatalf("a Pod follower must be refused, got %v", err)
	}
}

func TestEvaluationStopsAtTheBudget(t *testing.T) {
	spec := v1alpha1.WorkloadInterpreterSpec{
		Target: v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"},
		Health: &v1alpha1.HealthRule{Ready: "object.spec.items.all(x, object.spec.items.all(y, x + y >= 0))"},
	}
	in, errs := Compile(&spec, Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	items := make([]any, 3000)
	for i := range items {
		items[i] = int64(i)
	}
	o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"items": items}}}
	_, err := in.Health(o)
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("want the cost limit error, got %v", err)
	}
	o.Object["spec"] = map[string]any{"items": items[:10]}
	if h, err := in.Health(o); err != nil || h.Ready == nil || !*h.Ready {
		t.Fatalf("a small list: %v, %v", h, err)
	}
}

// TestConditionsFollowTheKindsShape: a kind whose schema's conditions
// have lastUpdateTime (Argo Rollouts requires it) gets it on the host's
// conditions; one whose schema does not, does not; without a schema the
// members' conditions decide.
func TestConditionsFollowTheKindsShape(t *testing.T) {
	crd, err := crds.For("argoproj.io", "Rollout")
	if err != nil || crd == nil {
		t.Fatalf("Rollout CRD: %v", err)
	}
	s, err := SchemaOf(crd)
	if err != nil {
		t.Fatal(err)
	}
	spec := &shipped(t, "rollout.argoproj.io").Spec
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	member := Member{Cluster: "a", Current: true, Object: obj(t, `{kind: Rollout, status: {conditions: [{type: Available, status: 'True', reason: AvailableReason, message: ok}]}}`)}
	bare := Member{Cluster: "a", Current: true, Object: obj(t, `{kind: Rollout, status: {conditions: [{type: Available, status: 'True'}]}}`)}
	for _, tc := range []struct {
		name    string
		schema  bool
		members []Member
		want    bool
	}{
		{"schema has it", true, []Member{bare}, true},
		{"no schema, members without it", false, []Member{bare}, false},
		{"no schema, members with it", false, []Member{{Cluster: "a", Current: true, Object: obj(t, `{kind: Rollout, status: {conditions: [{type: Available, status: 'True', lastUpdateTime: '2026-11-25T11:00:00Z'}]}}`)}}, true},
		{"schema has it, no member reports", true, []Member{{Cluster: "a"}}, true},
		{"the member's own", true, []Member{member}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{}
			if tc.schema {
				opts.Schema = s
			}
			in, errs := Compile(spec, opts)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			got, err := in.AggregateStatus(obj(t, "kind: Rollout"), tc.members, now)
			if err != nil {
				t.Fatal(err)
			}
			conds, _, _ := unstructured.NestedSlice(got, "conditions")
			var available map[string]any
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == "Available" {
					available = m
				}
			}
			if _, has := available["lastUpdateTime"]; available == nil || has != tc.want {
				t.Fatalf("Available condition %v: want lastUpdateTime present %v", available, tc.want)
			}
		})
	}
	// The CloneSet's schema has no lastUpdateTime in its conditions.
	cs, errs := Compile(&shipped(t, "cloneset.apps.kruise.io").Spec, Options{Schema: cloneSetSchema(t)})
	if len(errs) > 0 || cs.conditionUpdateTime != schemaSaysNo && len(cs.conditions) > 0 {
		t.Fatalf("CloneSet: %v, %v", errs, cs.conditionUpdateTime)
	}
}

func TestRolloutRule(t *testing.T) {
	in := compileShipped(t, "cloneset.apps.kruise.io")
	if !in.GovernsRollouts() {
		t.Fatal("the shipped CloneSet interpreter has no rollout rule")
	}
	tmpl := cloneSet(t, 9, "")
	if s, u, surges := in.RolloutBudget(tmpl); s == nil || u == nil || s.String() != "0" || u.String() != "20%" || !surges {
		t.Errorf("unset budget: %v %v %t, want CloneSet's defaults 0 and 20%%", s, u, surges)
	}
	if err := unstructured.SetNestedField(tmpl.Object, "50%", "spec", "updateStrategy", "maxUnavailable"); err != nil {
		t.Fatal(err)
	}
	if _, u, _ := in.RolloutBudget(tmpl); u == nil || u.String() != "50%" {
		t.Errorf("maxUnavailable = %v, want 50%%", u)
	}
	// A count beyond int32 saturates rather than wrapping to a negative one.
	if err := unstructured.SetNestedField(tmpl.Object, int64(1)<<40, "spec", "updateStrategy", "maxUnavailable"); err != nil {
		t.Fatal(err)
	}
	if _, u, _ := in.RolloutBudget(tmpl); u == nil || u.IntValue() != math.MaxInt32 {
		t.Errorf("maxUnavailable 2^40 reads as %v, want %d", u, math.MaxInt32)
	}
	if err := unstructured.SetNestedField(tmpl.Object, "50%", "spec", "updateStrategy", "maxUnavailable"); err != nil {
		t.Fatal(err)
	}
	if in.RolloutPaused(tmpl) {
		t.Error("paused before SetRolloutPaused")
	}
	if in.OwnPartition(tmpl) {
		t.Error("no partition counts as one")
	}
	if err := in.SetRolloutPaused(tmpl); err != nil || !in.RolloutPaused(tmpl) {
		t.Errorf("SetRolloutPaused: %v, paused %t", err, in.RolloutPaused(tmpl))
	}
	if p, _, _ := unstructured.NestedString(tmpl.Object, "spec", "updateStrategy", "partition"); p != "100%" {
		t.Errorf("a held copy's partition is %q, want 100%%", p)
	}
	if err := in.SetRolloutShare(tmpl, 2, 1); err != nil {
		t.Fatal(err)
	}
	if s, u, _ := in.RolloutBudget(tmpl); s == nil || u == nil || s.IntValue() != 2 || u.IntValue() != 1 {
		t.Errorf("share written as %v/%v, want 2/1", s, u)
	}
	live := cloneSet(t, 3, `{observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 1}`)
	if u, a := in.RolloutCounts(live); u != 2 || a != 1 {
		t.Errorf("counts %d/%d, want 2/1", u, a)
	}
	if u, a := in.RolloutCounts(cloneSet(t, 3, "")); u != 0 || a != 0 {
		t.Errorf("counts without status %d/%d, want 0/0", u, a)
	}
}
