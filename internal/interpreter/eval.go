package interpreter

import (
	"fmt"
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// eval runs the program with the variables; errors name the expression's
// place in the spec.
func (p *program) eval(vars map[string]any) (ref.Val, error) {
	out, _, err := p.prg.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	return out, nil
}

// evalBool runs a boolean expression.
func (p *program) evalBool(vars map[string]any) (bool, error) {
	out, err := p.eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%s: evaluated to %s, not a bool", p.path, out.Type())
	}
	return bool(b), nil
}

// evalInt32 runs an integer expression whose result must fit a replica
// count (0 to MaxInt32).
func (p *program) evalInt32(vars map[string]any) (int32, error) {
	out, err := p.eval(vars)
	if err != nil {
		return 0, err
	}
	var n int64
	switch v := out.(type) {
	case types.Int:
		n = int64(v)
	case types.Uint:
		if v > math.MaxInt32 {
			return 0, fmt.Errorf("%s: %d is out of range", p.path, v)
		}
		n = int64(v)
	default:
		return 0, fmt.Errorf("%s: evaluated to %s, not an int", p.path, out.Type())
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d is out of range (0 to %d)", p.path, n, math.MaxInt32)
	}
	return int32(n), nil
}

// maxDepth bounds the nesting of a value converted back from CEL.
const maxDepth = 64

// native converts a CEL value to the JSON-shaped Go value unstructured
// objects hold: nil, bool, int64, float64, string, []any, map[string]any.
func native(v ref.Val, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("%d does not fit an int64", x)
		}
		return int64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	}
	switch x := v.(type) {
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is a %s, not a string", k, k.Type())
			}
			val, err := native(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = val
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			val, err := native(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	if types.IsError(v) {
		return nil, fmt.Errorf("%v", v)
	}
	return nil, fmt.Errorf("a %s cannot be stored in an object", v.Type())
}
