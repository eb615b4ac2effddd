package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// skipIntent and skipLive are the paths the two hashes leave out (as
// trees: a nil leaf leaves out the whole field).
var (
	skipIntent = skipTree(append(append([][]string{}, identity...), comparedByValue...))
	skipLive   = skipTree(comparedByValue)
)

// skipTree turns paths into a tree of maps with nil leaves.
func skipTree(paths [][]string) map[string]any {
	root := map[string]any{}
	for _, p := range paths {
		m := root
		for i, k := range p {
			if i == len(p)-1 {
				m[k] = nil
				break
			}
			next, _ := m[k].(map[string]any)
			if next == nil {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
	}
	return root
}

// intentOwnedHash is the owned-field hash of a prepared object.
func intentOwnedHash(obj map[string]any) (string, error) {
	var w canonWriter
	w.value(obj, skipIntent)
	return w.sum(), nil
}

// liveOwnedHash is the owned-field hash of a member object: the values of
// the fields Flotilla's apply entry owns. ok is false when the object has
// no such entry.
func liveOwnedHash(obj map[string]any) (hash string, ok bool) {
	set, ok := appliedSet(obj)
	if !ok {
		return "", false
	}
	var w canonWriter
	w.owned(obj, set, skipLive)
	return w.sum(), true
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

// canonWriter writes values in a canonical form, the input of both
// hashes. What Contains treats as equal is written one way: empty maps,
// empty lists and nulls are absent, integral numbers are integers, and
// quantities are in their canonical form ("0.5" and "500m" alike). Map
// keys are sorted. It is not JSON; only its equality matters.
type canonWriter struct{ buf []byte }

// sum is the hash of what was written.
func (w *canonWriter) sum() string {
	s := sha256.Sum256(w.buf)
	return hex.EncodeToString(s[:12])
}

// child returns the part of a skip tree below key, and whether key is
// skipped entirely.
func child(skip map[string]any, key string) (map[string]any, bool) {
	sub, found := skip[key]
	if !found {
		return nil, false
	}
	m, _ := sub.(map[string]any)
	return m, m == nil
}

// value writes v's canonical form without the paths in skip; it writes
// nothing and returns false when v is empty.
func (w *canonWriter) value(v any, skip map[string]any) bool {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return w.object(keys, skip, func(k string, sub map[string]any) bool { return w.value(x[k], sub) })
	case []any:
		if len(x) == 0 {
			return false
		}
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if !w.value(e, nil) {
				w.buf = append(w.buf, "null"...)
			}
		}
		w.buf = append(w.buf, ']')
		return true
	case string:
		if x != "" && quantityLike(x) && startsNumeric(x) {
			if q, err := resource.ParseQuantity(x); err == nil {
				w.buf = append(w.buf, 'q')
				w.buf = strconv.AppendQuote(w.buf, q.String())
				return true
			}
		}
		w.buf = strconv.AppendQuote(w.buf, x)
		return true
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
		return true
	case int64:
		w.buf = strconv.AppendInt(w.buf, x, 10)
		return true
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
		return true
	case int32:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
		return true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			w.buf = strconv.AppendInt(w.buf, int64(x), 10)
		} else {
			w.buf = strconv.AppendFloat(w.buf, x, 'g', -1, 64)
		}
		return true
	case nil:
		return false
	}
	w.buf = fmt.Appendf(w.buf, "%T:%v", v, v)
	return true
}

// object writes the fields keys (sorted) of an object, each by write,
// leaving out the skipped ones and the empty ones; it writes nothing and
// returns false when none remains.
func (w *canonWriter) object(keys []string, skip map[string]any, write func(k string, sub map[string]any) bool) bool {
	start := len(w.buf)
	w.buf = append(w.buf, '{')
	n := 0
	for _, k := range keys {
		sub, skipped := child(skip, k)
		if skipped {
			continue
		}
		mark := len(w.buf)
		if n > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = strconv.AppendQuote(w.buf, k)
		w.buf = append(w.buf, ':')
		if write(k, sub) {
			n++
		} else {
			w.buf = w.buf[:mark]
		}
	}
	if n == 0 {
		w.buf = w.buf[:start]
		return false
	}
	w.buf = append(w.buf, '}')
	return true
}

// owned writes the canonical form of the part of v that the FieldsV1 set
// fs names, without the paths in skip, as value would write that part on
// its own; false when nothing is named. Set entries are "f:<field>" (a map
// key), "k:<json>" (the element of a keyed list whose key fields hold
// those values), "v:<json>" (the element of a set with that value),
// "i:<n>" (an index) and "." (the node itself). A member of the set with
// no children is a leaf: the whole value is owned. Elements of lists keep
// the member's order.
func (w *canonWriter) owned(v any, fs map[string]any, skip map[string]any) bool {
	switch x := v.(type) {
	case map[string]any:
		sets := make(map[string]map[string]any, len(fs))
		keys := make([]string, 0, len(fs))
		for k, sub := range fs {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if _, found := x[name]; !found {
				continue
			}
			sets[name], _ = sub.(map[string]any)
			keys = append(keys, name)
		}
		slices.Sort(keys)
		return w.object(keys, skip, func(k string, sub map[string]any) bool {
			if isLeaf(sets[k]) {
				return w.value(x[k], sub)
			}
			return w.owned(x[k], sets[k], sub)
		})
	case []any:
		type pick struct {
			i   int
			key string
			set map[string]any
		}
		var picks []pick
		for k, sub := range fs {
			set, _ := sub.(map[string]any)
			for _, i := range listElements(x, k) {
				picks = append(picks, pick{i, k, set})
			}
		}
		slices.SortFunc(picks, func(a, b pick) int {
			if a.i != b.i {
				return a.i - b.i
			}
			return strings.Compare(a.key, b.key)
		})
		start := len(w.buf)
		w.buf = append(w.buf, '[')
		n := 0
		for _, p := range picks {
			mark := len(w.buf)
			if n > 0 {
				w.buf = append(w.buf, ',')
			}
			var ok bool
			switch {
			case strings.HasPrefix(p.key, "k:") && isLeaf(p.set):
				ok = w.value(keyFields(p.key), nil)
			case isLeaf(p.set):
				ok = w.value(x[p.i], nil)
			default:
				ok = w.owned(x[p.i], p.set, nil)
			}
			if ok {
				n++
			} else {
				w.buf = w.buf[:mark]
			}
		}
		if n == 0 {
			w.buf = w.buf[:start]
			return false
		}
		w.buf = append(w.buf, ']')
		return true
	}
	return false
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

// startsNumeric reports whether s may be a quantity at all (a sign, a
// digit or a point first), which spares ParseQuantity most strings.
func startsNumeric(s string) bool {
	c := s[0]
	return c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9')
}
