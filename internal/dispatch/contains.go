package dispatch

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Contains reports whether every field set in desired holds the same value
// in live: desired is a subset of live. Maps may carry extra keys in live
// (defaults, fields of other managers). Lists of objects that all have a
// "name" (containers, env, ports, volumes) are matched by name and live may
// hold extra elements (an injected sidecar); other lists must match element
// by element. Strings that both parse as quantities compare by value ("0.5"
// equals "500m"; see quantityLike for which strings are tried), and numbers
// compare by value whatever their Go type.
func Contains(live, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return false
			}
			if !Contains(lv, dv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return len(d) == 0 && live == nil
		}
		if byName, ok := namedElements(l); ok {
			if want, ok := namedElements(d); ok {
				for name, dv := range want {
					lv, ok := byName[name]
					if !ok || !Contains(lv, dv) {
						return false
					}
				}
				return true
			}
		}
		if len(l) != len(d) {
			return false
		}
		for i := range d {
			if !Contains(l[i], d[i]) {
				return false
			}
		}
		return true
	case string:
		l, ok := live.(string)
		if !ok {
			return false
		}
		if l == d {
			return true
		}
		if !quantityLike(l) || !quantityLike(d) {
			return false
		}
		lq, err1 := resource.ParseQuantity(l)
		dq, err2 := resource.ParseQuantity(d)
		return err1 == nil && err2 == nil && lq.Cmp(dq) == 0
	case int64, int, int32, float64:
		lf, ok1 := number(live)
		df, ok2 := number(desired)
		return ok1 && ok2 && lf == df
	default:
		return reflect.DeepEqual(live, desired)
	}
}

// maxQuantityLength bounds the strings compared as quantities; resource
// quantities are short.
const maxQuantityLength = 40

// quantityLike reports whether s is safe to parse as a resource quantity:
// short, and with a decimal exponent ("1e3") of at most two digits.
// resource.ParseQuantity computes 10^exponent exactly, so a hash or a name
// that happens to read like "83e4596127" would keep it busy for minutes
// and take gigabytes; quantities that Kubernetes stores never need such
// exponents (its largest suffix is E, 10^18).
func quantityLike(s string) bool {
	if len(s) == 0 || len(s) > maxQuantityLength {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exponent := strings.TrimLeft(s[i+1:], "+-")
	return len(exponent) <= 2
}

// namedElements indexes a list whose elements are all objects with a
// string "name".
func namedElements(list []any) (map[string]any, bool) {
	if len(list) == 0 {
		return nil, false
	}
	out := make(map[string]any, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		name, ok := m["name"].(string)
		if !ok {
			return nil, false
		}
		out[name] = e
	}
	return out, true
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// isEmpty reports whether a desired value sets nothing (null, empty map or
// list), which the apiserver drops rather than stores.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
