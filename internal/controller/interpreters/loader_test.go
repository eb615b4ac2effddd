package interpreters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	shipped "github.com/flotilla-io/flotilla/config/interpreters"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/workload"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// flakyReader serves one CRD, failing the next fail reads as an
// apiserver that cannot reach etcd does, and the recorded revisions.
type flakyReader struct {
	fail      int
	crd       *apiextensionsv1.CustomResourceDefinition
	revisions []appsv1.ControllerRevision
}

func (r *flakyReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.fail > 0 {
		r.fail--
		return apierrors.NewServiceUnavailable("etcd is unavailable")
	}
	r.crd.DeepCopyInto(obj.(*apiextensionsv1.CustomResourceDefinition))
	return nil
}

func (r *flakyReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	revs, ok := list.(*appsv1.ControllerRevisionList)
	if !ok {
		return errors.New("only ControllerRevisions are listed")
	}
	revs.Items = append([]appsv1.ControllerRevision(nil), r.revisions...)
	return nil
}

// TestLoaderKeepsWhatWorks: what is in use stays in use unless something
// better is known. An interpreter whose CRD cannot be read when nothing
// else is in use is used unchecked rather than not at all, and dropped if
// it then fails its check; a generation that does not compile, or cannot
// be checked yet, leaves the one in use (Ready=False saying which), as
// does a CRD change its expressions no longer fit; so neither a bad edit
// nor an apiserver hiccup releases held rollouts or changes how the kind
// is divided. A first generation that does not compile is not used; a
// deleted interpreter is not either.
func TestLoaderKeepsWhatWorks(t *testing.T) {
	ctx := context.Background()
	crd, err := crds.CloneSet()
	if err != nil {
		t.Fatal(err)
	}
	crd.ResourceVersion = "7"
	// The same CRD once status.readyReplicas, which the interpreter
	// reads, is gone from its schema.
	narrowed := crd.DeepCopy()
	narrowed.ResourceVersion = "8"
	for i, v := range narrowed.Spec.Versions {
		status := v.Schema.OpenAPIV3Schema.Properties["status"]
		delete(status.Properties, "readyReplicas")
		status.Required = slices.DeleteFunc(status.Required, func(f string) bool { return f == "readyReplicas" })
		narrowed.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = status
	}
	good, err := shipped.Named("cloneset.apps.kruise.io")
	if err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	gv := schema.GroupVersion{Group: gk.Group, Version: "v1alpha1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind(gk.Kind), meta.RESTScopeNamespace)
	const (
		fine     = ""
		syntax   = "object.status.("                // fails with or without the schema
		typeOnly = "object.status.noSuchField == 1" // fails only against the schema
	)
	generation := func(n int64, ready string) *v1alpha1.WorkloadInterpreter {
		wi := good.DeepCopy()
		wi.Generation, wi.UID = n, "uid-1"
		if ready != fine {
			wi.Spec.Health.Ready = v1alpha1.Expression(ready)
		}
		return wi
	}
	type want struct {
		inUse   int64
		reason  string
		message string
	}
	var registry *workload.Registry
	var reader *flakyReader
	var l *Loader
	var inRegistry *interpreter.Interpreter
	start := func() {
		registry = &workload.Registry{}
		reader = &flakyReader{crd: crd}
		l = NewLoader(nil, reader, mapper, registry)
		inRegistry = nil
	}
	// step loads wi, the next fail reads of the CRD failing, and checks
	// the outcome, the condition and whether the registry changed.
	step := func(name string, wi *v1alpha1.WorkloadInterpreter, fail int, w want, replaced bool) {
		t.Helper()
		reader.fail = fail
		l.load(ctx, wi)
		out, ok := l.Outcome(good.Name)
		if !ok {
			t.Fatalf("%s: no outcome", name)
		}
		c := Condition(out, out.Generation)
		if out.InUse != w.inUse || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
			t.Errorf("%s: in use %d, %s %q; want %d, %s containing %q", name, out.InUse, c.Reason, c.Message, w.inUse, w.reason, w.message)
		}
		got := registry.Get(gk)
		if (got != nil) != (w.inUse != 0) {
			t.Errorf("%s: kind in the registry %v, want %v", name, got != nil, w.inUse != 0)
		}
		if (got != inRegistry) != replaced {
			t.Errorf("%s: registry entry replaced %v, want %v", name, got != inRegistry, replaced)
		}
		inRegistry = got
	}

	start()
	step("first load, CRD unreadable: used unchecked", generation(1, fine), 1,
		want{1, ReasonCompiled, "not yet checked against its CustomResourceDefinition, whose schema could not be read (read CustomResourceDefinition clonesets.apps.kruise.io: etcd is unavailable); reading it again"}, true)
	step("the retry reads it: checked", generation(1, fine), 0,
		want{1, ReasonTypeChecked, "checked against the schema of CustomResourceDefinition clonesets.apps.kruise.io"}, true)
	step("the same again: nothing changes", generation(1, fine), 0,
		want{1, ReasonTypeChecked, "checked against"}, false)
	step("a syntax error: generation 1 stays", generation(2, syntax), 0,
		want{1, ReasonInvalid, "generation 2 is not in use: spec.health.ready"}, false)
	step("a type error while the CRD is unreadable: pending, generation 1 stays", generation(3, typeOnly), 1,
		want{1, ReasonPending, "generation 3 waits for its check: the schema of its CustomResourceDefinition could not be read"}, false)
	step("the CRD readable again: the type error, generation 1 stays", generation(3, typeOnly), 0,
		want{1, ReasonInvalid, "generation 3 is not in use: spec.health.ready"}, false)
	step("the CRD unreadable again for the generation in use: it stays as it is", generation(1, fine), 1,
		want{1, ReasonTypeChecked, "checked against"}, false)
	step("a good generation", generation(4, fine), 0,
		want{4, ReasonTypeChecked, "in use for CloneSet.apps.kruise.io"}, true)
	reader.crd = narrowed
	step("a CRD change its expressions no longer fit: it stays as compiled", generation(4, fine), 0,
		want{4, ReasonInvalid, "generation 4 no longer checks against CustomResourceDefinition clonesets.apps.kruise.io: "}, false)
	step("the CRD unreadable while generation 4 no longer checks: it stays Invalid", generation(4, fine), 1,
		want{4, ReasonInvalid, "generation 4 no longer checks against"}, false)
	reader.crd = crd
	step("the CRD readable and fitting again", generation(4, fine), 0,
		want{4, ReasonTypeChecked, "checked against"}, true)
	recreated := generation(4, fine)
	recreated.UID = "uid-2"
	step("deleted and created again under the same name, same generation: the new one is loaded", recreated, 0,
		want{4, ReasonTypeChecked, "checked against"}, true)
	l.unload(generation(4, fine))
	if registry.Get(gk) != nil {
		t.Error("a deleted interpreter is still in use")
	}

	start()
	step("first load, CRD unreadable, a type error: used unchecked", generation(1, typeOnly), 1,
		want{1, ReasonCompiled, "not yet checked"}, true)
	step("its check fails: dropped, nothing earlier to fall back on", generation(1, typeOnly), 0,
		want{0, ReasonInvalid, "not in use, CloneSet.apps.kruise.io objects are propagated as they are"}, true)

	start()
	step("a first generation that does not compile", generation(1, syntax), 0,
		want{0, ReasonInvalid, "not in use"}, false)

	// A process that starts while the current generation does not
	// compile falls back on the generation last in use, as the leader
	// recorded it.
	recorded := func(gen int64, uid types.UID, mutate func(*v1alpha1.WorkloadInterpreter)) appsv1.ControllerRevision {
		wi := generation(gen, fine)
		if mutate != nil {
			mutate(wi)
		}
		spec, err := json.Marshal(wi.Spec)
		if err != nil {
			t.Fatal(err)
		}
		return appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", gen), OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "flotilla.io/v1alpha1", Kind: "WorkloadInterpreter", Name: good.Name, UID: uid, Controller: ptr.To(true)}}},
			Data: runtime.RawExtension{Raw: spec}, Revision: gen,
		}
	}
	start()
	reader.revisions = []appsv1.ControllerRevision{recorded(1, "uid-1", nil), recorded(2, "uid-1", nil)}
	step("a restart while generation 3 does not compile: the newest recorded one", generation(3, syntax), 0,
		want{2, ReasonInvalid, "generation 3 is not in use: spec.health.ready"}, true)
	step("generation 3 still bad: generation 2 stays", generation(3, syntax), 0,
		want{2, ReasonInvalid, "generation 2 stays in use"}, false)

	start()
	reader.revisions = []appsv1.ControllerRevision{recorded(2, "uid-1", nil)}
	step("a restart with the CRD unreadable: the recorded generation, not generation 3 unchecked", generation(3, typeOnly), 1,
		want{2, ReasonPending, "generation 3 waits for its check"}, true)
	step("the CRD readable: generation 3 fails its check, generation 2 stays", generation(3, typeOnly), 0,
		want{2, ReasonInvalid, "generation 3 is not in use"}, false)

	start()
	reader.revisions = []appsv1.ControllerRevision{recorded(3, "uid-1", nil)}
	step("a restart with the CRD unreadable, the current generation recorded: in use, said to be unchecked", generation(3, fine), 1,
		want{3, ReasonCompiled, "not yet checked against its CustomResourceDefinition"}, true)

	start()
	reader.revisions = []appsv1.ControllerRevision{recorded(2, "uid-of-an-earlier-interpreter", nil)}
	step("a revision of an earlier interpreter of the same name is not used", generation(3, syntax), 0,
		want{0, ReasonInvalid, "not in use"}, false)

	start()
	reader.revisions = []appsv1.ControllerRevision{recorded(2, "uid-1", func(wi *v1alpha1.WorkloadInterpreter) { wi.Spec.Target.Kind = "Cloneset" })}
	step("a revision for another kind is not used", generation(3, syntax), 0,
		want{0, ReasonInvalid, "not in use"}, false)
}
