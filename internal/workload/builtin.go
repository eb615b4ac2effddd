package workload

import (
	"embed"
	"fmt"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// builtinFiles are the WorkloadInterpreter specs of the native kinds:
// the same mechanism users describe their CRDs with. What an expression
// cannot say stays Go, next to the status function of the kind
// (status_apps.go, status_job.go, status_service.go) and in PodSpecPath
// (a Pod is its own template); docs/custom-workloads.md lists it.
//
//go:embed builtin/*.yaml
var builtinFiles embed.FS

// builtins are the compiled specs of the native kinds, by group and kind.
var builtins = mustCompileBuiltins()

// mustCompileBuiltins compiles builtinFiles; a spec that does not compile
// is a programming error, caught by every test of the package.
func mustCompileBuiltins() map[schema.GroupKind]*interpreter.Interpreter {
	out, err := compileBuiltins(builtinFiles)
	if err != nil {
		panic(err)
	}
	return out
}

// compileBuiltins compiles every spec in files.
func compileBuiltins(files fs.FS) (map[schema.GroupKind]*interpreter.Interpreter, error) {
	names, err := fs.Glob(files, "builtin/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupKind]*interpreter.Interpreter{}
	for _, n := range names {
		raw, err := fs.ReadFile(files, n)
		if err != nil {
			return nil, err
		}
		var spec v1alpha1.WorkloadInterpreterSpec
		if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
			return nil, fmt.Errorf("built-in interpreter %s: %w", n, err)
		}
		in, errs := interpreter.Compile(&spec, interpreter.Options{})
		if len(errs) > 0 {
			return nil, fmt.Errorf("built-in interpreter %s: %w", n, errs.ToAggregate())
		}
		out[in.Kind()] = in
	}
	// The extensions group served Deployments and ReplicaSets of the same
	// shape before apps did.
	for _, k := range []string{"Deployment", "ReplicaSet"} {
		if in, ok := out[schema.GroupKind{Group: "apps", Kind: k}]; ok {
			out[schema.GroupKind{Group: "extensions", Kind: k}] = in
		}
	}
	return out, nil
}

// interpreterFor returns the interpreter of a kind: the built-in one of a
// native kind, else the registered WorkloadInterpreter, else nil.
func interpreterFor(gk schema.GroupKind) *interpreter.Interpreter {
	if in, ok := builtins[gk]; ok {
		return in
	}
	return Interpreters.Get(gk)
}

// interpreterOf returns the interpreter of obj's kind, or nil.
func interpreterOf(obj *unstructured.Unstructured) *interpreter.Interpreter {
	if obj == nil {
		return nil
	}
	return interpreterFor(obj.GroupVersionKind().GroupKind())
}

// RolloutInterpreter returns the interpreter of obj's kind when it is a
// custom kind whose WorkloadInterpreter has a rollout rule (a federated
// rollout may govern it), else nil. Deployments and StatefulSets are
// governed by the rollout package itself.
func RolloutInterpreter(obj *unstructured.Unstructured) *interpreter.Interpreter {
	if obj == nil {
		return nil
	}
	gk := obj.GroupVersionKind().GroupKind()
	if _, builtin := builtins[gk]; builtin {
		return nil
	}
	if in := Interpreters.Get(gk); in != nil && in.GovernsRollouts() {
		return in
	}
	return nil
}
