package workload

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// withCloneSetInterpreter registers the shipped CloneSet interpreter for
// the test.
func withCloneSetInterpreter(t *testing.T) { withCloneSetInterpreterB(t) }

// withCloneSetInterpreterB is withCloneSetInterpreter for tests and
// benchmarks.
func withCloneSetInterpreterB(t testing.TB) {
	t.Helper()
	wi, err := interpreters.Named("cloneset.apps.kruise.io")
	if err != nil {
		t.Fatal(err)
	}
	in, errs := interpreter.Compile(&wi.Spec, interpreter.Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	Interpreters.Set(in)
	t.Cleanup(func() { Interpreters.Remove(in.Kind()) })
}

func unstructuredYAML(t *testing.T, s string) *unstructured.Unstructured {
	return unstructuredYAMLB(t, s)
}

// unstructuredYAMLB decodes a YAML object, for tests and benchmarks.
func unstructuredYAMLB(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

const cloneSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: web, namespace: demo, generation: 1}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, envFrom: [{secretRef: {name: creds}}]}]
      volumes: [{name: v, configMap: {name: settings}}]
`

func TestInterpretedKindsFollowTheirInterpreter(t *testing.T) {
	obj := unstructuredYAML(t, cloneSetYAML)
	kind := schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}

	// Without an interpreter: the generic rules (an integer spec.replicas,
	// a spec.template.spec with containers); no status, no failover.
	if n, ok := Replicas(obj); !ok || n != 6 {
		t.Fatalf("generic Replicas = %d, %v", n, ok)
	}
	if Aggregated(obj) || Migratable(obj) {
		t.Fatal("a kind without an interpreter is neither aggregated nor migratable")
	}

	withCloneSetInterpreter(t)
	if n, ok := Replicas(obj); !ok || n != 6 {
		t.Fatalf("Replicas = %d, %v", n, ok)
	}
	if err := SetReplicas(obj, 2); err != nil {
		t.Fatal(err)
	}
	if n, _ := Replicas(obj); n != 2 {
		t.Fatalf("after SetReplicas(2): %d", n)
	}
	if !Aggregated(obj) || !Migratable(obj) {
		t.Fatal("the CloneSet interpreter aggregates status and knows the pods")
	}
	if got := Followers(obj); len(got) != 2 || got[0] != (v1alpha1.ObjectReference{Kind: "ConfigMap", Name: "settings"}) || got[1] != (v1alpha1.ObjectReference{Kind: "Secret", Name: "creds"}) {
		t.Fatalf("Followers = %v", got)
	}
	if owners := PodOwners(kind, "web", nil); len(owners) != 1 || owners[0].GroupKind != kind {
		t.Fatalf("PodOwners = %v", owners)
	}
	if sel, ok := PodSelector(obj); !ok || sel.String() != "app=web" {
		t.Fatalf("PodSelector = %v, %v", sel, ok)
	}

	live := unstructuredYAML(t, cloneSetYAML)
	live.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "readyReplicas": int64(2)}
	if n, ok := ReadyReplicas(live); !ok || n != 2 {
		t.Fatalf("ReadyReplicas = %d, %v", n, ok)
	}
	if n, ok := PodCount(live); !ok || n != 3 {
		t.Fatalf("PodCount = %d, %v", n, ok)
	}

	// Health: graceful eviction reads a copy's readiness from health.ready.
	if !JudgesReadiness(obj) || Ready(live) {
		t.Fatalf("JudgesReadiness %v, Ready %v (2 of 6 ready): want true, false", JudgesReadiness(obj), Ready(live))
	}
	ready := live.DeepCopy()
	ready.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(6), "readyReplicas": int64(6), "updatedReadyReplicas": int64(6)}
	if !Ready(ready) {
		t.Fatal("a copy with every replica ready and updated is not Ready")
	}

	// Status: computed, then unchanged once the template holds it.
	members := []Member{{Cluster: "member-1", Object: live, Current: true}}
	status, changed := AggregateStatus(obj, members, metav1.Now())
	if !changed || status["replicas"] != int64(3) || status["readyReplicas"] != int64(2) || status["observedGeneration"] != int64(1) {
		t.Fatalf("AggregateStatus = %v, %v", status, changed)
	}
	obj.Object["status"] = status
	if _, changed, ruleErr := AggregateStatusOf(obj, members, metav1.Now()); changed || ruleErr != nil {
		t.Fatalf("the same members: changed %v, rule error %v; want neither", changed, ruleErr)
	}

	// A rule that fails (text where a number is summed) keeps its field
	// and is returned; the other rules still apply.
	odd := live.DeepCopy()
	odd.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": "three", "readyReplicas": int64(1)}
	status, changed, ruleErr := AggregateStatusOf(obj, []Member{{Cluster: "member-1", Object: odd, Current: true}}, metav1.Now())
	if ruleErr == nil || !strings.Contains(ruleErr.Error(), "status.replicas") {
		t.Fatalf("rule error %v; want one naming status.replicas", ruleErr)
	}
	if !changed || status["replicas"] != int64(3) || status["readyReplicas"] != int64(1) {
		t.Fatalf("status %v (changed %v); want replicas kept at 3 and readyReplicas 1", status, changed)
	}

	// Removed: the generic rules again.
	Interpreters.Remove(kind)
	if Aggregated(obj) {
		t.Fatal("still aggregated after the interpreter was removed")
	}
}

func TestRegistryTellsSubscribers(t *testing.T) {
	r := &Registry{}
	var got []schema.GroupKind
	r.Subscribe(func(gk schema.GroupKind) { got = append(got, gk) })
	spec := v1alpha1.WorkloadInterpreterSpec{Target: v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"}}
	in, errs := interpreter.Compile(&spec, interpreter.Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	r.Set(in)
	r.Remove(in.Kind())
	r.Remove(in.Kind()) // not there: nobody is told
	if len(got) != 2 || got[0] != in.Kind() || got[1] != in.Kind() {
		t.Fatalf("subscribers told %v", got)
	}
	if r.Get(in.Kind()) != nil || len(r.Kinds()) != 0 {
		t.Fatal("the registry still holds the kind")
	}
}
