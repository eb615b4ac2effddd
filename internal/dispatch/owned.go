package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owned-field hashes let a cache keep a hash of a member copy instead of
// the copy's spec. The hash of a copy covers the fields Flotilla's apply
// entry in managedFields names, with the values the copy holds; the hash of
// an Intent covers every field the intent sets. Right after an apply the
// two sets are the same, so the hashes are equal unless the member's
// apiserver spelled a value differently ("0.5" stored as "500m", which the
// canonical form below evens out, or a spelling it does not know about).
// When someone else changes a field Flotilla set, the field changes owner
// and leaves Flotilla's set: the copy's hash changes. Equal hashes
// therefore mean "nothing to write"; different hashes mean "read the copy
// and compare" (see Applier.write), never "write" on their own.

// comparedByValue are paths left out of both hashes and compared by value
// instead: a member-side actor (an HPA) may own them while the federation
// keeps the member's value (Options.KeepLive), and a projection keeps
// their values.
var comparedByValue = [][]string{{"spec", "replicas"}}

// identity are the paths an Intent carries but no field manager owns.
var identity = [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}

// intentOwnedHash is the owned-field hash of a prepared object.
func intentOwnedHash(obj map[string]any) (string, error) {
	return canonicalHash(without(without(obj, identity), comparedByValue))
}

// liveOwnedHash is the owned-field hash of a member object: the values of
// the fields Flotilla's apply entry owns. ok is false when the object has
// no such entry.
func liveOwnedHash(obj map[string]any) (hash string, ok bool) {
	set, ok := appliedSet(obj)
	if !ok {
		return "", false
	}
	owned, _ := ownedPart(obj, set)
	m, _ := owned.(map[string]any)
	hash, err := canonicalHash(without(m, comparedByValue))
	return hash, err == nil
}

// appliedSet returns the FieldsV1 set of Flotilla's apply entry in the
// managedFields of obj (decoded JSON, as an unstructured object holds it).
func appliedSet(obj map[string]any) (map[string]any, bool) {
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if entry["manager"] != FieldManager || entry["operation"] != string(metav1.ManagedFieldsOperationApply) {
			continue
		}
		if sub, _ := entry["subresource"].(string); sub != "" {
			continue
		}
		set, ok := entry["fieldsV1"].(map[string]any)
		return set, ok
	}
	return nil, false
}

// ownedPart returns the part of v that the FieldsV1 set fs names, sharing
// leaves with v (callers must not modify it), and whether anything was
// named. Set entries are "f:<field>" (a map key), "k:<json>" (the element
// of a keyed list whose key fields hold those values), "v:<json>" (the
// element of a set with that value), "i:<n>" (an index) and "." (the node
// itself). A member of the set with no children is a leaf: the whole
// value is owned.
func ownedPart(v any, fs map[string]any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range fs {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			child, found := x[name]
			if !found {
				continue
			}
			if subSet, _ := sub.(map[string]any); !isLeaf(subSet) {
				if o, ok := ownedPart(child, subSet); ok {
					out[name] = o
				}
				continue
			}
			out[name] = child
		}
		return out, len(out) > 0
	case []any:
		picked := map[int]any{}
		for k, sub := range fs {
			subSet, _ := sub.(map[string]any)
			for _, i := range listElements(x, k) {
				switch {
				case strings.HasPrefix(k, "k:") && isLeaf(subSet):
					picked[i] = keyFields(k)
				case isLeaf(subSet):
					picked[i] = x[i]
				default:
					if o, ok := ownedPart(x[i], subSet); ok {
						picked[i] = o
					}
				}
			}
		}
		if len(picked) == 0 {
			return nil, false
		}
		idx := make([]int, 0, len(picked))
		for i := range picked {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		out := make([]any, 0, len(idx))
		for _, i := range idx {
			out = append(out, picked[i])
		}
		return out, true
	}
	return nil, false
}

// isLeaf reports whether a set member has no children but ".".
func isLeaf(set map[string]any) bool {
	for k := range set {
		if k != "." {
			return false
		}
	}
	return true
}

// listElements returns the indexes of the elements of list that the set
// entry k names.
func listElements(list []any, k string) []int {
	switch {
	case strings.HasPrefix(k, "i:"):
		i, err := strconv.Atoi(k[2:])
		if err != nil || i < 0 || i >= len(list) {
			return nil
		}
		return []int{i}
	case strings.HasPrefix(k, "k:"):
		key := keyFields(k)
		if key == nil {
			return nil
		}
		var out []int
		for i, e := range list {
			if m, ok := e.(map[string]any); ok && Contains(m, key) && Contains(key, keyOnly(m, key)) {
				out = append(out, i)
			}
		}
		return out
	case strings.HasPrefix(k, "v:"):
		var want any
		if json.Unmarshal([]byte(k[2:]), &want) != nil {
			return nil
		}
		var out []int
		for i, e := range list {
			if Contains(e, want) && Contains(want, e) {
				out = append(out, i)
			}
		}
		return out
	}
	return nil
}

// keyFields decodes the key of a "k:" set entry; nil when it does not
// decode to an object.
func keyFields(k string) map[string]any {
	var key map[string]any
	if json.Unmarshal([]byte(strings.TrimPrefix(k, "k:")), &key) != nil {
		return nil
	}
	return key
}

// keyOnly returns the fields of m that key names.
func keyOnly(m, key map[string]any) map[string]any {
	out := make(map[string]any, len(key))
	for k := range key {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// without returns obj without the given paths, copying only the maps on
// the way to them (obj is not modified).
func without(obj map[string]any, paths [][]string) map[string]any {
	for _, p := range paths {
		obj = withoutPath(obj, p)
	}
	return obj
}

func withoutPath(m map[string]any, path []string) map[string]any {
	v, found := m[path[0]]
	if !found {
		return m
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = e
	}
	if len(path) == 1 {
		delete(out, path[0])
		return out
	}
	if child, ok := v.(map[string]any); ok {
		out[path[0]] = withoutPath(child, path[1:])
	}
	return out
}

// canonicalHash hashes the canonical form of v.
func canonicalHash(v map[string]any) (string, error) {
	b, err := json.Marshal(canonical(v)) // map keys sorted: deterministic
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// canonical returns v with what Contains treats as equal spelled one way:
// empty maps, empty lists and nulls dropped (an absent field), integral
// numbers as int64, and quantities in their canonical form ("0.5" and
// "500m" alike).
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if c := canonical(e); c != nil {
				out[k] = c
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	case string:
		if x == "" || !quantityLike(x) || !startsNumeric(x) {
			return x
		}
		if q, err := resource.ParseQuantity(x); err == nil {
			return "q:" + q.String()
		}
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	}
	return v
}

// startsNumeric reports whether s may be a quantity at all (a sign, a
// digit or a point first), which spares ParseQuantity most strings.
func startsNumeric(s string) bool {
	c := s[0]
	return c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9')
}
