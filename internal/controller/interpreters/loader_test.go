package interpreters

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	shipped "github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/workload"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// flakyReader serves one CRD, failing the next fail reads as an
// apiserver that cannot reach etcd does.
type flakyReader struct {
	fail int
	crd  *apiextensionsv1.CustomResourceDefinition
}

func (r *flakyReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.fail > 0 {
		r.fail--
		return apierrors.NewServiceUnavailable("etcd is unavailable")
	}
	r.crd.DeepCopyInto(obj.(*apiextensionsv1.CustomResourceDefinition))
	return nil
}

func (r *flakyReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// TestLoaderKeepsWhatWorks: an interpreter whose CRD cannot be read for a
// while is used unchecked rather than dropped; a generation that does
// not compile leaves the earlier one in use (with Ready=False saying
// so), so that neither a bad edit nor an apiserver hiccup releases held
// rollouts or changes how the kind is divided; a first generation that
// does not compile is not used; a deleted interpreter is.
func TestLoaderKeepsWhatWorks(t *testing.T) {
	ctx := context.Background()
	crd, err := crds.CloneSet()
	if err != nil {
		t.Fatal(err)
	}
	crd.ResourceVersion = "7"
	all, err := shipped.All()
	if err != nil {
		t.Fatal(err)
	}
	var good *v1alpha1.WorkloadInterpreter
	for _, wi := range all {
		if wi.Name == "cloneset.apps.kruise.io" {
			good = wi.DeepCopy()
		}
	}
	if good == nil {
		t.Fatal("no shipped CloneSet interpreter")
	}
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	gv := schema.GroupVersion{Group: gk.Group, Version: "v1alpha1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind(gk.Kind), meta.RESTScopeNamespace)
	generation := func(n int64, bad bool) *v1alpha1.WorkloadInterpreter {
		wi := good.DeepCopy()
		wi.Generation = n
		if bad {
			wi.Spec.Health.Ready = "object.status.("
		}
		return wi
	}
	type want struct {
		inUse     int64
		status    metav1.ConditionStatus
		reason    string
		message   string
		schemaErr bool
	}
	check := func(t *testing.T, l *Loader, registry *workload.Registry, w want) {
		t.Helper()
		out, ok := l.Outcome(good.Name)
		if !ok {
			t.Fatal("no outcome")
		}
		if out.InUse != w.inUse || (out.SchemaErr != nil) != w.schemaErr {
			t.Errorf("outcome: in use %d, schema error %v; want %d, %v", out.InUse, out.SchemaErr, w.inUse, w.schemaErr)
		}
		if got := registry.Get(gk) != nil; got != (w.inUse != 0) {
			t.Errorf("kind in the registry: %v, want %v", got, w.inUse != 0)
		}
		c := Condition(out, out.Generation)
		if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
			t.Errorf("condition %s/%s %q; want %s/%s containing %q", c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
		}
	}

	registry := &workload.Registry{}
	reader := &flakyReader{fail: 1, crd: crd}
	l := NewLoader(nil, reader, mapper, registry)
	l.load(ctx, generation(1, false))
	check(t, l, registry, want{inUse: 1, status: metav1.ConditionTrue, reason: ReasonCompiled, schemaErr: true,
		message: "whose schema could not be read (read CustomResourceDefinition clonesets.apps.kruise.io: etcd is unavailable); reading it again"})
	first := registry.Get(gk)

	l.load(ctx, generation(1, false)) // the retry, the apiserver back
	check(t, l, registry, want{inUse: 1, status: metav1.ConditionTrue, reason: ReasonTypeChecked, message: "checked against the schema of CustomResourceDefinition clonesets.apps.kruise.io"})
	checked := registry.Get(gk)
	if checked == first {
		t.Error("the type-checked interpreter did not replace the unchecked one")
	}

	l.load(ctx, generation(2, true))
	check(t, l, registry, want{inUse: 1, status: metav1.ConditionFalse, reason: ReasonInvalid,
		message: "generation 2 is not in use: spec.health.ready"})
	if registry.Get(gk) != checked {
		t.Error("a generation that does not compile replaced the one in use")
	}
	if !strings.Contains(Condition(mustOutcome(t, l, good.Name), 2).Message, "generation 1 stays in use for CloneSet.apps.kruise.io") {
		t.Errorf("the condition does not say which generation stays in use: %q", Condition(mustOutcome(t, l, good.Name), 2).Message)
	}

	reader.fail = 1
	l.load(ctx, generation(2, true)) // and then the apiserver fails too
	check(t, l, registry, want{inUse: 1, status: metav1.ConditionFalse, reason: ReasonInvalid, schemaErr: true, message: "generation 2 is not in use"})

	l.load(ctx, generation(3, false))
	check(t, l, registry, want{inUse: 3, status: metav1.ConditionTrue, reason: ReasonTypeChecked, message: "in use for CloneSet.apps.kruise.io"})

	l.unload(generation(3, false))
	if registry.Get(gk) != nil {
		t.Error("a deleted interpreter is still in use")
	}

	// A first generation that does not compile is not used.
	fresh := &workload.Registry{}
	l = NewLoader(nil, &flakyReader{crd: crd}, mapper, fresh)
	l.load(ctx, generation(1, true))
	check(t, l, fresh, want{status: metav1.ConditionFalse, reason: ReasonInvalid, message: "not in use, CloneSet.apps.kruise.io objects are propagated as they are"})
}

func mustOutcome(t *testing.T, l *Loader, name string) Outcome {
	t.Helper()
	out, ok := l.Outcome(name)
	if !ok {
		t.Fatal("no outcome")
	}
	return out
}
