package interpreter

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// CostBudget is the most an expression may cost in one evaluation, in
// CEL cost units (about 0.1 µs each): the per-call limit of Kubernetes'
// own validation rules. Compile refuses an expression whose estimated
// worst case exceeds it (when the kind's schema bounds the sizes), and an
// evaluation that reaches it stops with an error.
const CostBudget = 1_000_000

// MaxMembers is the number of members cost estimates assume a status
// expression may walk.
const MaxMembers = 1000

// The variables expressions see.
const (
	// varObject is the object (or member copy) an expression judges.
	varObject = "object"
	// varTemplate is the host object, in status expressions.
	varTemplate = "template"
	// varMembers is the list of member copies, in status expressions.
	varMembers = "members"
)

// envVersion is the Kubernetes version whose CEL libraries expressions
// may use.
var envVersion = version.MajorMinor(1, 36)

// scope is the variables of one kind of expression.
type scope int

const (
	// objectScope: `object`.
	objectScope scope = iota
	// statusScope: `members` and `template`.
	statusScope
)

// envs are the compiled environments for one schema (nil: untyped).
type envs struct {
	object, status *cel.Env
	// estimator bounds sizes from the schema, when there is one.
	estimator checker.CostEstimator
}

var (
	untypedOnce sync.Once
	untyped     *envs
	untypedErr  error
)

// untypedEnvs are the environments where every variable is dyn: the ones
// evaluation runs in, and checking's fallback without a schema.
func untypedEnvs() (*envs, error) {
	untypedOnce.Do(func() {
		member := apiservercel.NewObjectType("flotilla.member", map[string]*apiservercel.DeclField{
			"cluster": apiservercel.NewDeclField("cluster", apiservercel.StringType, true, nil, nil),
			"object":  apiservercel.NewDeclField("object", apiservercel.DynType, false, nil, nil),
			"current": apiservercel.NewDeclField("current", apiservercel.BoolType, true, nil, nil),
		})
		untyped, untypedErr = buildEnvs(apiservercel.DynType, member)
	})
	return untyped, untypedErr
}

// typedEnvs are environments whose `object`, `template` and members'
// `object` have the type of the kind's structural schema.
func typedEnvs(s *structuralschema.Structural) (*envs, error) {
	obj := objectType(s)
	if obj == nil {
		return nil, fmt.Errorf("the kind's schema has no CEL type")
	}
	member := apiservercel.NewObjectType("flotilla.member", map[string]*apiservercel.DeclField{
		"cluster": apiservercel.NewDeclField("cluster", apiservercel.StringType, true, nil, nil),
		"object":  apiservercel.NewDeclField("object", obj, false, nil, nil),
		"current": apiservercel.NewDeclField("current", apiservercel.BoolType, true, nil, nil),
	})
	e, err := buildEnvs(obj, member)
	if err != nil {
		return nil, err
	}
	e.estimator = &library.CostEstimator{SizeEstimator: &sizes{object: obj, member: member}}
	return e, nil
}

// buildEnvs extends the Kubernetes base environment with the variables of
// each scope.
func buildEnvs(obj, member *apiservercel.DeclType) (*envs, error) {
	base := environment.MustBaseEnvSet(envVersion)
	members := apiservercel.NewListType(member, -1)
	objSet, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(varObject, obj.CelType())},
		DeclTypes:         declTypes(obj),
	})
	if err != nil {
		return nil, fmt.Errorf("object environment: %w", err)
	}
	statusSet, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable(varTemplate, obj.CelType()),
			cel.Variable(varMembers, members.CelType()),
		},
		DeclTypes: append(declTypes(obj), member),
	})
	if err != nil {
		return nil, fmt.Errorf("status environment: %w", err)
	}
	e := &envs{}
	if e.object, err = objSet.Env(environment.StoredExpressions); err != nil {
		return nil, err
	}
	if e.status, err = statusSet.Env(environment.StoredExpressions); err != nil {
		return nil, err
	}
	return e, nil
}

// declTypes lists t when it is an object type that must be declared.
func declTypes(t *apiservercel.DeclType) []*apiservercel.DeclType {
	if t.IsObject() {
		return []*apiservercel.DeclType{t}
	}
	return nil
}

// env returns the environment of a scope.
func (e *envs) env(s scope) *cel.Env {
	if s == statusScope {
		return e.status
	}
	return e.object
}

// MaxEstimatedSize is the largest size (items of a list or map,
// characters of a string) a cost estimate assumes. Schemas rarely bound
// status fields, and the worst case a request could carry (3 MB) would
// refuse every expression that walks a list; the estimate is there to
// refuse expressions whose cost grows as a square or worse, and every
// evaluation enforces CostBudget on the real sizes.
const MaxEstimatedSize = 1024

// sizes estimates the sizes of values reached from the variables, from
// the schema's maxItems, maxProperties and maxLength, at most
// MaxEstimatedSize.
type sizes struct {
	object, member *apiservercel.DeclType
}

// EstimateSize walks the element's path from its variable.
func (s *sizes) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	path := element.Path()
	if len(path) == 0 {
		return nil
	}
	var t *apiservercel.DeclType
	switch path[0] {
	case varObject, varTemplate:
		t = s.object
	case varMembers:
		t = apiservercel.NewListType(s.member, MaxMembers)
	default:
		return nil
	}
	for _, name := range path[1:] {
		switch name {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		default:
			f, ok := t.Fields[name]
			if !ok {
				return nil
			}
			t = f.Type
		}
		if t == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(min(max(t.MaxElements, 0), MaxEstimatedSize))}
}

// EstimateCallCost leaves call costs to the library's estimator.
func (s *sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
