package dispatch

import (
	"encoding/json"
	"testing"
	"time"

	k8sjson "k8s.io/apimachinery/pkg/util/json"
)

// containsBudget bounds one Contains call on a fuzz input. A correct call
// takes microseconds; the bound is loose so a loaded machine does not
// fail it, and tight enough to catch the quantity parser computing a huge
// power of ten (minutes).
const containsBudget = 3 * time.Second

// FuzzContains checks the live-versus-intent comparison on arbitrary JSON:
// any value contains itself, a live object with extra fields (defaults,
// other managers) still contains the intent, two strings compare the same
// whichever is live, and every call returns quickly, whatever the strings
// look like (hash labels that read as quantities with huge exponents).
func FuzzContains(f *testing.F) {
	seeds := [][2]string{
		{`"a"`, `"a"`},
		{`"500m"`, `"0.5"`},
		{`"1e3"`, `"1k"`},
		{`"1E"`, `"1000P"`},
		{`"83e4596127331094"`, `"83e4596127331095"`},
		{`"1e-999999999"`, `"2e-999999999"`},
		{`"12E+18"`, `"2Ei"`},
		{`3`, `3.0`},
		{`true`, `false`},
		{`null`, `{}`},
		{`{"a":"1","b":"2"}`, `{"a":"1"}`},
		{`{"a":"1"}`, `{"a":"1","c":{}}`},
		{`{"a":{"b":"1"}}`, `{"a":{"b":"2"}}`},
		{`[{"name":"app","image":"v1","imagePullPolicy":"IfNotPresent"}]`, `[{"name":"app","image":"v1"}]`},
		{`[{"name":"b","image":"2"},{"name":"a","image":"1"}]`, `[{"name":"a","image":"1"},{"name":"b","image":"2"}]`},
		{`[{"name":"a"},{"name":"a","x":1}]`, `[{"name":"a","x":1}]`},
		{`["a","b","c"]`, `["a","b"]`},
		{`[{"port":80,"protocol":"TCP"}]`, `[{"port":80}]`},
		{`{"metadata":{"labels":{"flotilla.io/template-hash":"83e4596127331094"}}}`, `{"metadata":{"labels":{"flotilla.io/template-hash":"83e4596127331095"}}}`},
		{`{"resources":{"limits":{"cpu":"1e99"}}}`, `{"resources":{"limits":{"cpu":"1e-99"}}}`},
		{`not json 1e2`, `1E+99`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		// The raw bytes as strings, whatever they hold: the quantity path.
		sa, sb := string(a), string(b)
		ab := timedContains(t, sa, sb)
		if ba := timedContains(t, sb, sa); ab != ba {
			t.Fatalf("Contains(%q, %q) = %v but Contains(%q, %q) = %v", sa, sb, ab, sb, sa, ba)
		}
		if !timedContains(t, sa, sa) {
			t.Fatalf("Contains(%q, %q) = false", sa, sa)
		}

		x, okX := decode(a)
		y, okY := decode(b)
		if okX {
			if !timedContains(t, x, x) {
				t.Fatalf("Contains(x, x) = false for x = %s", a)
			}
			if _, isMap := x.(map[string]any); isMap && !timedContains(t, x, map[string]any{}) {
				t.Fatalf("Contains(x, {}) = false for the object x = %s", a)
			}
		}
		if okX && okY {
			timedContains(t, x, y)
			if !timedContains(t, merge(x, y), x) {
				t.Fatalf("Contains(x with the extra fields of y, x) = false for x = %s, y = %s", a, b)
			}
		}
	})
}

// timedContains calls Contains and fails when it takes longer than
// containsBudget.
func timedContains(t *testing.T, live, desired any) bool {
	t.Helper()
	start := time.Now()
	got := Contains(live, desired)
	if d := time.Since(start); d > containsBudget {
		t.Fatalf("Contains(%v, %v) took %v", live, desired, d)
	}
	return got
}

// decode decodes JSON the way objects read from the apiserver are decoded
// (integers as int64).
func decode(data []byte) (any, bool) {
	var v any
	if err := k8sjson.Unmarshal(data, &v); err != nil {
		return nil, false
	}
	return v, true
}

// merge returns x with the object members of y that x lacks added at every
// level: what a live object holds beyond the intent x. Lists and scalars
// are x's.
func merge(x, y any) any {
	xm, ok1 := x.(map[string]any)
	ym, ok2 := y.(map[string]any)
	if !ok1 || !ok2 {
		return x
	}
	out := make(map[string]any, len(xm)+len(ym))
	for k, v := range ym {
		out[k] = v
	}
	for k, v := range xm {
		if yv, ok := ym[k]; ok {
			out[k] = merge(v, yv)
		} else {
			out[k] = v
		}
	}
	return out
}

// FuzzOwnedFields checks the managedFields walk on arbitrary objects and
// field sets: it never panics and is deterministic, and a set that names
// every field of an object as a leaf writes the object as it is.
func FuzzOwnedFields(f *testing.F) {
	f.Add([]byte(`{"a":1,"c":[{"name":"a","image":"1"}]}`), []byte(`{"f:a":{},"f:c":{"k:{\"name\":\"a\"}":{".":{},"f:image":{}}}}`))
	f.Add([]byte(`{"s":["x","y"]}`), []byte(`{"f:s":{"v:\"y\"":{},"i:0":{}}}`))
	f.Add([]byte(`{"p":[{"port":80}]}`), []byte(`{"f:p":{"k:{\"port\":80}":{".":{}}}}`))
	f.Fuzz(func(t *testing.T, obj, set []byte) {
		var o any
		if json.Unmarshal(obj, &o) != nil {
			return
		}
		var s map[string]any
		if json.Unmarshal(set, &s) == nil {
			var a, b canonWriter
			a.owned(o, s, nil)
			b.owned(o, s, nil)
			if string(a.buf) != string(b.buf) {
				t.Fatalf("owned(%s, %s) differs between two calls: %s, %s", obj, set, a.buf, b.buf)
			}
		}
		m, ok := o.(map[string]any)
		if !ok {
			return
		}
		all := map[string]any{}
		for k := range m {
			all["f:"+k] = map[string]any{}
		}
		var whole, part canonWriter
		whole.value(m, nil)
		part.owned(m, all, nil)
		if string(whole.buf) != string(part.buf) {
			t.Fatalf("every field owned: %s, the object itself: %s", part.buf, whole.buf)
		}
	})
}
