package interpreter

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// program is one compiled expression.
type program struct {
	// path is where it sits in the spec, for messages.
	path string
	prg  cel.Program
}

// Interpreter is a compiled WorkloadInterpreter spec: the operations on
// objects of its kind. It is immutable and safe for concurrent use.
type Interpreter struct {
	kind schema.GroupKind

	replicas        []string
	defaultReplicas int32
	hasReplicas     bool
	podTemplate     []string
	selector        []string
	observed        []string
	retain          [][]string

	fields     []statusField
	conditions []v1alpha1.StatusCondition
	// conditionUpdateTime says whether host conditions carry
	// lastUpdateTime: as the kind's schema says, else as the members'
	// conditions do.
	conditionUpdateTime schemaAnswer

	ready, progressing, failed, readyReplicas, pods, followers *program

	// rollout is the compiled rollout rule; nil without one.
	rollout *rolloutRule
}

// rolloutRule is a compiled RolloutRule.
type rolloutRule struct {
	paused, maxSurge, maxUnavailable, partition []string
	defaultSurge, defaultUnavailable            *intstr.IntOrString
	updated, available                          *program
	// integerPartition: the kind's schema makes the partition a plain
	// integer, which "100%" would not fit (a hold writes the largest
	// int32 there instead).
	integerPartition bool
}

// schemaAnswer is what the kind's schema says of a field.
type schemaAnswer int

const (
	// schemaUnknown: no schema to ask.
	schemaUnknown schemaAnswer = iota
	// schemaSays: the schema has the field.
	schemaSays
	// schemaSaysNo: the schema does not have it.
	schemaSaysNo
)

// statusField is one compiled status field rule.
type statusField struct {
	path      []string
	aggregate v1alpha1.StatusAggregate
	expr      *program
}

// Options tune Compile.
type Options struct {
	// Schema is the kind's structural schema (a CRD's, of the version the
	// objects are read in). With it, expressions are type-checked against
	// the kind's fields and their worst-case cost is estimated; without
	// it every field is dyn and only evaluation enforces the budget.
	Schema *structuralschema.Structural
}

// Compile checks spec and compiles its expressions. The errors carry
// field paths (spec.health.ready: ...), as admission reports them.
func Compile(spec *v1alpha1.WorkloadInterpreterSpec, opts Options) (*Interpreter, field.ErrorList) {
	fld := field.NewPath("spec")
	var errs field.ErrorList
	run, err := untypedEnvs()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(fld, err)}
	}
	check := run
	if opts.Schema != nil {
		if check, err = typedEnvs(opts.Schema); err != nil {
			return nil, field.ErrorList{field.Invalid(fld.Child("target"), spec.Target.Kind, "the kind's schema: "+err.Error())}
		}
	}
	c := compiler{run: run, check: check, schema: opts.Schema}

	in := &Interpreter{kind: schema.GroupKind{Group: spec.Target.Group, Kind: spec.Target.Kind}}
	if in.kind.Kind == "" {
		errs = append(errs, field.Required(fld.Child("target", "kind"), ""))
	}
	if r := spec.Replicas; r != nil {
		// An object without the field runs the kind's API default: 1
		// for most workloads, when the rule names none (0 would scale
		// every such workload to nothing in every member).
		in.hasReplicas, in.replicas, in.defaultReplicas = true, splitPath(r.Path), 1
		if r.Default != nil {
			in.defaultReplicas = *r.Default
		}
		errs = append(errs, c.checkPath(fld.Child("replicas", "path"), r.Path, "integer")...)
	}
	if p := spec.PodTemplate; p != nil {
		in.podTemplate = splitPath(p.Path)
		errs = append(errs, c.checkPath(fld.Child("podTemplate", "path"), p.Path, "object")...)
	}
	if p := spec.Selector; p != nil {
		in.selector = splitPath(p.Path)
		errs = append(errs, c.checkPath(fld.Child("selector", "path"), p.Path, "object")...)
	}
	for i, p := range spec.Retain {
		path := splitPath(p)
		in.retain = append(in.retain, path)
		switch path[0] {
		case "apiVersion", "kind", "metadata", "status":
			// Identity and ownership labels are Flotilla's, and status is
			// never written to a member.
			errs = append(errs, field.Invalid(fld.Child("retain").Index(i), p, "must not be under "+path[0]))
		default:
			errs = append(errs, c.checkPath(fld.Child("retain").Index(i), p, "")...)
		}
	}
	if h := spec.Health; h != nil {
		hf := fld.Child("health")
		in.ready = c.compile(hf.Child("ready"), h.Ready, objectScope, cel.BoolType, &errs)
		in.progressing = c.compile(hf.Child("progressing"), h.Progressing, objectScope, cel.BoolType, &errs)
		in.failed = c.compile(hf.Child("failed"), h.Failed, objectScope, cel.BoolType, &errs)
		in.readyReplicas = c.compile(hf.Child("readyReplicas"), h.ReadyReplicas, objectScope, cel.IntType, &errs)
		in.pods = c.compile(hf.Child("pods"), h.Pods, objectScope, cel.IntType, &errs)
	}
	in.followers = c.compile(fld.Child("followers"), spec.Followers, objectScope, cel.ListType(cel.DynType), &errs)
	if r := spec.Rollout; r != nil {
		rf := fld.Child("rollout")
		if !in.hasReplicas || in.podTemplate == nil {
			errs = append(errs, field.Invalid(rf, "", "rollout needs replicas and podTemplate"))
		}
		in.rollout = &rolloutRule{paused: splitPath(r.Paused), maxSurge: splitPath(r.MaxSurge), maxUnavailable: splitPath(r.MaxUnavailable),
			partition: splitPath(r.Partition), defaultSurge: r.DefaultMaxSurge, defaultUnavailable: r.DefaultMaxUnavailable}
		if len(in.rollout.paused) == 0 {
			errs = append(errs, field.Required(rf.Child("paused"), "the field that holds a copy"))
		}
		in.rollout.integerPartition = c.schema != nil && len(in.rollout.partition) > 0 && integerOnly(c.schema, in.rollout.partition)
		errs = append(errs, c.checkPath(rf.Child("paused"), r.Paused, "boolean")...)
		for _, b := range []struct {
			name string
			path v1alpha1.FieldPath
		}{{"maxSurge", r.MaxSurge}, {"maxUnavailable", r.MaxUnavailable}, {"partition", r.Partition}} {
			if b.path != "" {
				errs = append(errs, c.checkPath(rf.Child(b.name), b.path, "intOrString")...)
			}
		}
		names := []string{"paused", "maxSurge", "maxUnavailable", "partition"}
		paths := [][]string{in.rollout.paused, in.rollout.maxSurge, in.rollout.maxUnavailable, in.rollout.partition}
		for i, path := range paths {
			if len(path) > 0 && path[0] != "spec" {
				errs = append(errs, field.Invalid(rf.Child(names[i]), strings.Join(path, "."), "must be a field under spec"))
			}
			errs = append(errs, rolloutOverlaps(rf.Child(names[i]), path, in, names[:i], paths[:i])...)
			// A retained field keeps the member's value: a copy held once
			// would stay paused, and no share would reach it.
			for j, kept := range in.retain {
				if len(path) > 0 && overlaps(path, kept) {
					errs = append(errs, field.Invalid(fld.Child("retain").Index(j), strings.Join(kept, "."), "overlaps the rollout rule's "+names[i]+" field, which Flotilla writes during a federated rollout"))
				}
			}
		}
		for _, d := range []struct {
			name string
			v    *intstr.IntOrString
		}{{"defaultMaxSurge", r.DefaultMaxSurge}, {"defaultMaxUnavailable", r.DefaultMaxUnavailable}} {
			if d.v == nil {
				continue
			}
			if _, err := intstr.GetScaledValueFromIntOrPercent(d.v, 100, true); err != nil || d.v.IntValue() < 0 {
				errs = append(errs, field.Invalid(rf.Child(d.name), d.v.String(), "must be a non-negative integer or percentage"))
			}
		}
		in.rollout.updated = c.compile(rf.Child("updatedReplicas"), r.UpdatedReplicas, objectScope, cel.IntType, &errs)
		in.rollout.available = c.compile(rf.Child("availableReplicas"), r.AvailableReplicas, objectScope, cel.IntType, &errs)
	}
	if s := spec.Status; s != nil {
		sf := fld.Child("status")
		if s.ObservedGeneration != nil {
			in.observed = splitPath(s.ObservedGeneration.Path)
			if len(in.observed) < 2 || in.observed[0] != "status" {
				errs = append(errs, field.Invalid(sf.Child("observedGeneration", "path"), s.ObservedGeneration.Path, "must be a field under status"))
			}
			errs = append(errs, c.checkPath(sf.Child("observedGeneration", "path"), s.ObservedGeneration.Path, "generation")...)
		}
		for i, f := range s.Fields {
			ff := sf.Child("fields").Index(i)
			out := statusField{path: splitPath(f.Path), aggregate: f.Aggregate}
			if len(out.path) < 2 || out.path[0] != "status" {
				errs = append(errs, field.Invalid(ff.Child("path"), f.Path, "must be a field under status"))
			}
			switch f.Aggregate {
			case v1alpha1.AggregateExpression:
				if f.Expression == "" {
					errs = append(errs, field.Required(ff.Child("expression"), "aggregate Expression needs an expression"))
				}
				out.expr = c.compile(ff.Child("expression"), f.Expression, statusScope, nil, &errs)
			case v1alpha1.AggregateSum:
				errs = append(errs, c.checkPath(ff.Child("path"), f.Path, "number")...)
			case v1alpha1.AggregateMax, v1alpha1.AggregateMin:
				errs = append(errs, c.checkPath(ff.Child("path"), f.Path, "scalar")...)
			case v1alpha1.AggregateFirst:
				errs = append(errs, c.checkPath(ff.Child("path"), f.Path, "")...)
			case v1alpha1.AggregateMerge:
				errs = append(errs, c.checkPath(ff.Child("path"), f.Path, "collection")...)
			default:
				errs = append(errs, field.NotSupported(ff.Child("aggregate"), f.Aggregate, []string{"Sum", "Max", "Min", "First", "Merge", "Expression"}))
			}
			in.fields = append(in.fields, out)
		}
		for i, cond := range s.Conditions {
			if cond.Aggregate != v1alpha1.ConditionAllTrue && cond.Aggregate != v1alpha1.ConditionAnyTrue {
				errs = append(errs, field.NotSupported(sf.Child("conditions").Index(i).Child("aggregate"), cond.Aggregate, []string{"AllTrue", "AnyTrue"}))
			}
		}
		in.conditions = append(in.conditions, s.Conditions...)
		if opts.Schema != nil && len(s.Conditions) > 0 {
			in.conditionUpdateTime = schemaSaysNo
			if conditionsHave(opts.Schema, "lastUpdateTime") {
				in.conditionUpdateTime = schemaSays
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return in, nil
}

// Kind is the group and kind the interpreter describes.
func (in *Interpreter) Kind() schema.GroupKind { return in.kind }

// compiler compiles expressions: checked in the check environments
// (typed when a schema is known), run in the untyped ones.
type compiler struct {
	run, check *envs
	// schema is the kind's structural schema; nil when unknown.
	schema *structuralschema.Structural
}

// compile checks and compiles one expression of a scope; an empty one is
// nil. want, when not nil, is the type the expression must have (dyn is
// accepted and checked when it runs).
func (c compiler) compile(fld *field.Path, expr v1alpha1.Expression, s scope, want *cel.Type, errs *field.ErrorList) *program {
	src := string(expr)
	if strings.TrimSpace(src) == "" {
		return nil
	}
	checked, iss := c.check.env(s).Compile(src)
	if iss.Err() != nil {
		*errs = append(*errs, field.Invalid(fld, src, "compilation failed: "+iss.Err().Error()))
		return nil
	}
	if out := checked.OutputType(); want != nil && !want.IsAssignableType(out) && out != cel.DynType {
		*errs = append(*errs, field.Invalid(fld, src, fmt.Sprintf("must evaluate to %s, not %s", want, out)))
		return nil
	}
	if c.check.estimator != nil {
		est, err := c.check.env(s).EstimateCost(checked, c.check.estimator)
		if err != nil {
			*errs = append(*errs, field.Invalid(fld, src, "cost estimation failed: "+err.Error()))
			return nil
		}
		if est.Max > CostBudget {
			*errs = append(*errs, field.Forbidden(fld, fmt.Sprintf("estimated cost %d exceeds the budget of %d for one evaluation: bound the lists it walks (maxItems in the schema) or walk less", est.Max, CostBudget)))
			return nil
		}
	}
	ast, iss := c.run.env(s).Compile(src)
	if iss.Err() != nil {
		*errs = append(*errs, field.Invalid(fld, src, "compilation failed: "+iss.Err().Error()))
		return nil
	}
	prg, err := c.run.env(s).Program(ast, cel.CostLimit(CostBudget), cel.InterruptCheckFrequency(100))
	if err != nil {
		*errs = append(*errs, field.Invalid(fld, src, "program: "+err.Error()))
		return nil
	}
	return &program{path: fld.String(), prg: prg}
}

// checkPath checks, with a schema, that a field path exists in it and
// has the wanted shape.
func (c compiler) checkPath(fld *field.Path, p v1alpha1.FieldPath, want string) field.ErrorList {
	if c.schema == nil {
		return nil
	}
	if err := checkPath(c.schema, splitPath(p), want); err != nil {
		return field.ErrorList{field.Invalid(fld, p, err.Error())}
	}
	return nil
}

// overlaps reports whether one path is the other or lies under it.
func overlaps(a, b []string) bool {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rolloutOverlaps refuses a rollout rule's field (at fld, path) that
// overlaps the replicas, the pod template, the selector or one of the
// rule's fields before it: Flotilla writes the rule's fields during a
// rollout, so a maxUnavailable that names spec.replicas would set every
// copy's replicas to its share of the budget, and one under the pod
// template would change the pods.
func rolloutOverlaps(fld *field.Path, path []string, in *Interpreter, earlier []string, earlierPaths [][]string) field.ErrorList {
	if len(path) == 0 {
		return nil
	}
	var errs field.ErrorList
	for _, o := range []struct {
		name string
		path []string
	}{{"replicas", in.replicas}, {"podTemplate", in.podTemplate}, {"selector", in.selector}} {
		if len(o.path) > 0 && overlaps(path, o.path) {
			errs = append(errs, field.Invalid(fld, strings.Join(path, "."), "overlaps the "+o.name+" field "+strings.Join(o.path, ".")))
		}
	}
	for i, p := range earlierPaths {
		if len(p) > 0 && overlaps(path, p) {
			errs = append(errs, field.Invalid(fld, strings.Join(path, "."), "overlaps the rollout rule's "+earlier[i]+" field"))
		}
	}
	return errs
}

// splitPath splits a dotted field path.
func splitPath(p v1alpha1.FieldPath) []string {
	if p == "" {
		return nil
	}
	return strings.Split(string(p), ".")
}
