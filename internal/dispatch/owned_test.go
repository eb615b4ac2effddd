package dispatch

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestOwnedFields(t *testing.T) {
	tests := []struct {
		name, obj, set, want string
	}{
		{"leaf fields", `{"a":1,"b":{"c":2,"d":3}}`, `{"f:a":{},"f:b":{"f:c":{}}}`, `{"a":1,"b":{"c":2}}`},
		{"leaf takes the whole value", `{"sel":{"matchLabels":{"x":"1"}}}`, `{"f:sel":{}}`, `{"sel":{"matchLabels":{"x":"1"}}}`},
		{"absent field", `{"a":1}`, `{"f:b":{}}`, `null`},
		{"keyed list keeps member order, skips others' elements",
			`{"c":[{"name":"side","image":"e"},{"name":"b","image":"2","pull":"x"},{"name":"a","image":"1"}]}`,
			`{"f:c":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:image":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:image":{}}}}`,
			`{"c":[{"name":"b","image":"2"},{"name":"a","image":"1"}]}`},
		{"key with a number and a default", `{"p":[{"port":80,"protocol":"TCP","name":"h"}]}`,
			`{"f:p":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:name":{}}}}`, `{"p":[{"port":80,"name":"h"}]}`},
		{"key element owned only as a whole", `{"p":[{"name":"a","x":1}]}`, `{"f:p":{"k:{\"name\":\"a\"}":{".":{}}}}`, `{"p":[{"name":"a"}]}`},
		{"set list", `{"s":["x","y","z"]}`, `{"f:s":{"v:\"z\"":{},"v:\"x\"":{}}}`, `{"s":["x","z"]}`},
		{"index", `{"s":[{"a":1},{"a":2}]}`, `{"f:s":{"i:1":{"f:a":{}}}}`, `{"s":[{"a":2}]}`},
		{"bad entries are ignored", `{"s":[1,2]}`, `{"f:s":{"i:9":{},"i:x":{},"k:notjson":{},"v:{":{}}}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got, want canonWriter
			got.owned(decodeJSON(t, tt.obj), decodeJSON(t, tt.set).(map[string]any), nil)
			want.value(decodeJSON(t, tt.want), nil)
			if string(got.buf) != string(want.buf) {
				t.Errorf("owned part %s, want %s", got.buf, want.buf)
			}
		})
	}
}

func TestSkippedPaths(t *testing.T) {
	var a, b canonWriter
	a.value(map[string]any{"apiVersion": "v1", "kind": "A", "metadata": map[string]any{"name": "n", "namespace": "ns", "labels": map[string]any{"a": "1"}},
		"spec": map[string]any{"replicas": int64(3), "x": "1"}}, skipIntent)
	b.value(map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1"}}, "spec": map[string]any{"x": "1"}}, nil)
	if string(a.buf) != string(b.buf) {
		t.Errorf("with skipIntent %s, want %s", a.buf, b.buf)
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		same bool
	}{
		{"quantities", "0.5", "500m", true},
		{"different quantities", "0.5", "1", false},
		{"int and float", int64(3), float64(3), true},
		{"fraction", 0.5, int64(0), false},
		{"empty map and absent", map[string]any{"a": map[string]any{}}, map[string]any{}, true},
		{"null and absent", map[string]any{"a": nil, "b": "x"}, map[string]any{"b": "x"}, true},
		{"empty string is a value", map[string]any{"a": ""}, map[string]any{}, false},
		{"list order counts", []any{"a", "b"}, []any{"b", "a"}, false},
		{"names are not quantities", "app", "app", true},
		{"string and number differ", "3", int64(3), false},
		{"skipped paths", map[string]any{"spec": map[string]any{"replicas": int64(3), "x": "1"}, "kind": "A"},
			map[string]any{"spec": map[string]any{"x": "1"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b canonWriter
			a.value(tt.a, nil)
			b.value(tt.b, nil)
			if got := string(a.buf) == string(b.buf); got != tt.same {
				t.Errorf("canonical %s == %s: %v, want %v", a.buf, b.buf, got, tt.same)
			}
		})
	}
}

func TestProjectKeepsWhatIsComparedByValue(t *testing.T) {
	for _, p := range comparedByValue {
		if len(p) != 2 || p[0] != "spec" || !slices.Contains(keptSpec, p[1]) {
			t.Errorf("%v is compared by value but a projection does not keep it", p)
		}
	}
}

func TestProjectOfACopyFlotillaDidNotWrite(t *testing.T) {
	obj := &unstructured.Unstructured{Object: decodeJSON(t, `{"apiVersion":"v1","kind":"ConfigMap",
		"metadata":{"name":"a","namespace":"n","labels":{"flotilla.io/managed":"true"},
			"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","keep":"me"},
			"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:data":{}}}]},
		"data":{"x":"1"}}`).(map[string]any)}
	got, err := Project(obj)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*unstructured.Unstructured)
	if !IsProjection(p) || Written(p) || projectionHash(p) != noOwnedFields {
		t.Errorf("projection %v: want a projection, not Written, hash %q", p.Object, noOwnedFields)
	}
	if _, found := p.Object["data"]; found {
		t.Errorf("projection keeps data: %v", p.Object)
	}
	if a := p.GetAnnotations(); a["keep"] != "me" || a[lastApplied] != "" {
		t.Errorf("annotations %v: want keep=me without kubectl's record", a)
	}
	if again, _ := Project(p); again != any(p) {
		t.Errorf("projecting a projection made a new object")
	}
	if _, ok := obj.GetAnnotations()[lastApplied]; !ok {
		t.Errorf("Project modified its input")
	}
}

func TestProjectOfACustomKindKeepsItsSpec(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		wholeSpec        bool
	}{
		{"apps.kruise.io/v1alpha1", "CloneSet", true},
		{"argoproj.io/v1alpha1", "Rollout", true},
		{"apps/v1", "Deployment", false},
		{"networking.k8s.io/v1", "Ingress", false},
		{"v1", "Service", false},
	} {
		obj := &unstructured.Unstructured{Object: decodeJSON(t, `{"apiVersion":"`+tc.apiVersion+`","kind":"`+tc.kind+`",
			"metadata":{"name":"a","namespace":"n"},
			"spec":{"replicas":3,"template":{"spec":{"containers":[]}},"updateStrategy":{"paused":true}}}`).(map[string]any)}
		got, err := Project(obj)
		if err != nil {
			t.Fatal(err)
		}
		_, found, _ := unstructured.NestedFieldNoCopy(got.(*unstructured.Unstructured).Object, "spec", "updateStrategy")
		if found != tc.wholeSpec {
			t.Errorf("%s %s: projection keeps spec.updateStrategy %v, want %v", tc.apiVersion, tc.kind, found, tc.wholeSpec)
		}
	}
}
