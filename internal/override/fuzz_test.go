package override

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// FuzzImage checks image references: a reference that parses formats back
// to the same string and parses again to the same parts, and an overrider
// that applies gives a reference that parses back to what it formats to,
// with the overrider's parts in it.
func FuzzImage(f *testing.F) {
	images := []string{
		"nginx", "nginx:1.25", "library/nginx:1.25", "localhost:5000/a/b:t", "localhost/a",
		"r.io/a@" + testDigest, "r.io:443/a/b:t@" + testDigest, "gcr.io/my-proj/app_x/web.v2:v1.2.3-rc.1",
		"[::1]:5000/a:t", "myregistry/app:1",
		"", "Nginx", "nginx:", "nginx:bad tag", "r.io/", "/nginx", "a//b", "nginx@", "nginx@sha256:abc",
		"nginx@sha256:" + strings.Repeat("A", 64), "nginx@" + testDigest + "@" + testDigest, "r_x.io:/a",
	}
	overriders := []v1alpha1.ImageOverrider{
		{}, {Registry: "r.example.com"}, {Registry: "r.eu.example.com:443"}, {Repository: "mirror/b"},
		{Tag: "1.27"}, {Tag: "v2"}, {Digest: testDigest2}, {Tag: "new", Digest: testDigest},
		{Registry: "r.io", Repository: "x/y", Tag: "t"}, {Registry: "r.io/x"}, {Repository: "X"},
		{Tag: ".t"}, {Digest: "sha256:xyz"}, {Repository: "a.b/c"}, {Repository: "localhost/c"},
	}
	for i, image := range images {
		ov := overriders[i%len(overriders)]
		f.Add(image, ov.Registry, ov.Repository, ov.Tag, ov.Digest)
	}
	f.Add("nginx:1.25", "registry", "", "", "")
	f.Add("nginx", "", "mirror.example.com/nginx", "", "")
	f.Fuzz(func(t *testing.T, image, registry, repository, tag, digest string) {
		ref, err := parseImage(image)
		if err != nil {
			return
		}
		if s := ref.String(); s != image {
			t.Fatalf("parseImage(%q) = %+v, which formats as %q", image, ref, s)
		}
		checkParts(t, ref)
		again, err := parseImage(ref.String())
		if err != nil || again != ref {
			t.Fatalf("parseImage(%q) again = %+v, %v; want %+v", ref.String(), again, err, ref)
		}

		ov := v1alpha1.ImageOverrider{Registry: registry, Repository: repository, Tag: tag, Digest: digest}
		got, err := ref.override(&ov)
		if err != nil {
			return
		}
		checkParts(t, got)
		want := ref
		if registry != "" {
			want.registry = registry
		}
		if repository != "" {
			want.path = repository
		}
		switch {
		case tag != "" && digest != "":
			want.tag, want.digest = tag, digest
		case tag != "":
			want.tag, want.digest = tag, ""
		case digest != "":
			want.tag, want.digest = "", digest
		}
		if got != want {
			t.Fatalf("%q overridden by %+v = %+v, want %+v", image, ov, got, want)
		}
		back, err := parseImage(got.String())
		if err != nil || back != got {
			t.Fatalf("%q overridden by %+v formats as %q, which parses as %+v, %v: a runtime would read another image",
				image, ov, got.String(), back, err)
		}
	})
}

// TestImageOverrideReadsBack: an override whose result a runtime would
// read as another registry and repository fails (found by FuzzImage).
func TestImageOverrideReadsBack(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		ov      v1alpha1.ImageOverrider
		want    string
		wantErr string
	}{
		{"registry without dot or port", "nginx:1.25", v1alpha1.ImageOverrider{Registry: "registry"}, "", `registry "registry" would be read as part of the repository path`},
		{"registry without dot replacing one", "r.io/a:t", v1alpha1.ImageOverrider{Registry: "0"}, "", `registry "0" would be read`},
		{"repository that reads as a registry", "nginx", v1alpha1.ImageOverrider{Repository: "mirror.example.com/nginx"}, "", `repository "mirror.example.com/nginx" would be read as registry "mirror.example.com"`},
		{"repository with a dot under a registry", "r.io/a", v1alpha1.ImageOverrider{Repository: "a.b/c"}, "r.io/a.b/c", ""},
		{"registry and such a repository together", "nginx", v1alpha1.ImageOverrider{Registry: "r.io", Repository: "a.b/c"}, "r.io/a.b/c", ""},
		{"localhost", "nginx", v1alpha1.ImageOverrider{Registry: "localhost"}, "localhost/nginx", ""},
		{"host with a port", "nginx", v1alpha1.ImageOverrider{Registry: "registry:5000"}, "registry:5000/nginx", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := parseImage(tt.in)
			if err != nil {
				t.Fatalf("parseImage(%q): %v", tt.in, err)
			}
			got, err := ref.override(&tt.ov)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("override = %q, %v; want an error containing %q", got.String(), err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("override = %q, %v; want %q", got.String(), err, tt.want)
			}
		})
	}
}

// checkParts fails unless every part of ref that is set is valid.
func checkParts(t *testing.T, ref imageRef) {
	t.Helper()
	if err := checkPath(ref.path); err != nil {
		t.Fatalf("%+v: %v", ref, err)
	}
	if ref.registry != "" {
		if err := checkRegistry(ref.registry); err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
	}
	if ref.tag != "" {
		if err := checkTag(ref.tag); err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
	}
	if ref.digest != "" {
		if err := checkDigest(ref.digest); err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
	}
}

// seedJSON returns the JSON of a YAML manifest for a seed corpus.
func seedJSON(f *testing.F, manifest string) []byte {
	f.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		f.Fatalf("YAMLToJSON: %v", err)
	}
	return j
}

// decodeObject decodes fuzz bytes into an object the way the API machinery
// decodes one (integers as int64); ok is false when they are not a JSON
// object.
func decodeObject(data []byte) (*unstructured.Unstructured, bool) {
	var m map[string]any
	if err := k8sjson.Unmarshal(data, &m); err != nil || m == nil {
		return nil, false
	}
	return &unstructured.Unstructured{Object: m}, true
}

// FuzzApply applies arbitrary overriders (decoded from JSON) to arbitrary
// objects. Whatever they are, Apply does not panic, leaves the sources
// alone, is deterministic, leaves the object unchanged when it fails, and
// never changes the object's identity when it succeeds.
func FuzzApply(f *testing.F) {
	objects := [][]byte{seedJSON(f, deploymentYAML), seedJSON(f, cronJobYAML), seedJSON(f, configMapYAML), seedJSON(f, roleBindingYAML)}
	overriders := []v1alpha1.Overriders{
		{Image: []v1alpha1.ImageOverrider{{Registry: "r.example.com"}}},
		{Image: []v1alpha1.ImageOverrider{{ContainerNames: []string{"sidecar", "init"}, Tag: "v2"}, {ContainerNames: []string{"absent"}, Tag: "v3"}}},
		{Command: []v1alpha1.CommandOverrider{{ContainerName: "web", Values: []string{"nginx", "-g"}}, {ContainerName: "init", Operator: v1alpha1.ListAppend, Values: []string{"extra"}}},
			Args: []v1alpha1.CommandOverrider{{ContainerName: "web", Operator: v1alpha1.ListAppend, Values: []string{"--debug"}}, {ContainerName: "init"}}},
		{Command: []v1alpha1.CommandOverrider{{ContainerName: "debug", Values: []string{"x"}}}},
		{Env: []v1alpha1.EnvOverrider{{ContainerNames: []string{"web"}, Set: []v1alpha1.EnvVar{{Name: "Z", Value: "26"}, {Name: "B", Value: "two"}}, Remove: []string{"A", "Y"}}}},
		{Labels: &v1alpha1.MapOverrider{Set: map[string]string{"region": "eu", "gone": "x"}, Remove: []string{"gone", "app"}}, Annotations: &v1alpha1.MapOverrider{Remove: []string{"note"}}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/spec/replicas", `5`), op("add", pod+"/containers/0/env/1", `{"name":"X"}`),
			op("add", pod+"/tolerations", `[]`), op("add", pod+"/tolerations/-", `{"key":"k"}`), op("remove", pod+"/containers/1", ""), op("add", "/metadata/annotations/a~1b", `"s"`)}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata/name", `"other"`)}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata", `{"name":"web"}`)}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/kind", `"StatefulSet"`)}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata/name", `"tmp"`), op("replace", "/metadata/name", `"web"`)}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("remove", pod+"/containers/-1", ""), {Op: "add", Path: "/spec/paused"}, op("move", "/spec/paused", "")}},
		{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata", `"flat"`)}, Labels: &v1alpha1.MapOverrider{Set: map[string]string{"a": "b"}}},
	}
	for i, ov := range overriders {
		data, err := json.Marshal(ov)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(objects[i%len(objects)], data)
	}
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"template":{"spec":{"containers":"no"}}}}`),
		[]byte(`{"image":[{"tag":"t"}]}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"a":1}},"spec":{"template":[]}}`),
		[]byte(`{"labels":{"set":{"b":"c"}},"env":[{"set":[{"name":"A"}]}]}`))
	f.Fuzz(func(t *testing.T, objData, ovData []byte) {
		obj, ok := decodeObject(objData)
		if !ok {
			return
		}
		var ov v1alpha1.Overriders
		if err := json.Unmarshal(ovData, &ov); err != nil {
			return
		}
		sources := []Source{{Policy: "OverridePolicy/ns/fuzz", Rule: 0, Overriders: ov, Namespaced: true}}
		orig := obj.DeepCopy()
		// A namespace's overrides never change what an RBAC object grants.
		if checkApply(t, obj, sources) && !reflect.DeepEqual(grantsOf(orig), grantsOf(obj)) {
			t.Fatalf("a namespace's overrides changed what %s grants:\nbefore %v\nafter  %v", obj.GetKind(), grantsOf(orig), grantsOf(obj))
		}
	})
}

// FuzzJSONPatch applies one arbitrary JSON patch operation to arbitrary
// objects: besides what FuzzApply checks, a successful add or replace
// leaves the value at the path, and a successful remove takes it away.
func FuzzJSONPatch(f *testing.F) {
	deployment := seedJSON(f, deploymentYAML)
	seeds := []struct{ op, path, value string }{
		{"replace", "/spec/replicas", `5`},
		{"add", pod + "/priorityClassName", `"high"`},
		{"add", pod + "/containers/0/env/1", `{"name":"X","value":"x"}`},
		{"add", pod + "/tolerations", `[]`},
		{"add", pod + "/containers/-", `{"name":"extra"}`},
		{"remove", pod + "/containers/1", ``},
		{"add", "/metadata/annotations/a~1b", `"slash"`},
		{"replace", "/spec/foo", `1`},
		{"remove", "/metadata/labels/nope", ``},
		{"add", "/spec/strategy/type", `"Recreate"`},
		{"replace", pod + "/containers/2/image", `"x"`},
		{"remove", pod + "/containers/-1", ``},
		{"add", "/spec/paused", ``},
		{"move", "/spec/paused", ``},
		{"replace", "/metadata/name", `"other"`},
		{"replace", "/metadata", `{"name":"web"}`},
		{"replace", "/kind", `"StatefulSet"`},
		{"add", "/spec/replicas", `1e400`},
		{"add", "/spec/x", `{"a":1,"a":2.5}`},
		{"add", "", `{}`},
		{"add", "/", `1`},
		{"remove", "/spec/template/spec/containers/01", ``},
		{"replace", "/a~2", `1`},
		{"add", pod + "/containers/0/args/1", `"x"`},
	}
	for _, s := range seeds {
		f.Add(deployment, s.op, s.path, []byte(s.value))
	}
	f.Fuzz(func(t *testing.T, objData []byte, o, path string, value []byte) {
		obj, ok := decodeObject(objData)
		if !ok {
			return
		}
		patch := v1alpha1.JSONPatchOperation{Op: o, Path: path}
		if len(value) > 0 {
			patch.Value = &apiextensionsv1.JSON{Raw: value}
		}
		sources := []Source{{Policy: "OverridePolicy/ns/fuzz", Overriders: v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{patch}}}}
		before := obj.DeepCopy()
		if !checkApply(t, obj, sources) || !utf8.ValidString(path) {
			return
		}
		tokens := pointerTokens(path)
		switch o {
		case "add", "replace":
			var want any
			if err := k8sjson.Unmarshal(value, &want); err != nil {
				t.Fatalf("%s %s succeeded with a value that does not decode: %v", o, path, err)
			}
			if o == "add" && tokens[len(tokens)-1] == "-" {
				parent, ok := at(obj.Object, tokens[:len(tokens)-1])
				list, isList := parent.([]any)
				if !ok || !isList || len(list) == 0 {
					t.Fatalf("add %s succeeded but %s is no longer a non-empty list: %v", path, path, parent)
				}
				tokens = append(tokens[:len(tokens)-1:len(tokens)-1], fmt.Sprint(len(list)-1))
			}
			got, ok := at(obj.Object, tokens)
			if !ok || encode(t, got) != encode(t, want) {
				t.Fatalf("%s %s %s succeeded but the path holds %s (found %v)", o, path, value, encode(t, got), ok)
			}
		case "remove":
			parent, _ := at(before.Object, tokens[:len(tokens)-1])
			now, _ := at(obj.Object, tokens[:len(tokens)-1])
			switch p := parent.(type) {
			case map[string]any:
				m, isMap := now.(map[string]any)
				if _, still := m[tokens[len(tokens)-1]]; !isMap || still {
					t.Fatalf("remove %s succeeded but the member is still there (parent %v)", path, now)
				}
			case []any:
				if l, isList := now.([]any); !isList || len(l) != len(p)-1 {
					t.Fatalf("remove %s succeeded but the list went from %d to %v elements", path, len(p), now)
				}
			default:
				t.Fatalf("remove %s succeeded on a parent that is a %T", path, parent)
			}
		default:
			t.Fatalf("unsupported operation %q succeeded", o)
		}
	})
}

// checkApply applies sources to obj and checks what holds for any input;
// it reports whether Apply succeeded.
func checkApply(t *testing.T, obj *unstructured.Unstructured, sources []Source) bool {
	t.Helper()
	before := obj.DeepCopy()
	sourcesBefore := make([]Source, len(sources))
	for i, s := range sources {
		sourcesBefore[i] = Source{Policy: s.Policy, Rule: s.Rule, Overriders: *s.Overriders.DeepCopy(), Namespaced: s.Namespaced}
	}
	other := obj.DeepCopy()

	err := Apply(obj, sources)
	if !reflect.DeepEqual(sources, sourcesBefore) {
		t.Fatalf("Apply changed its sources")
	}
	otherErr := Apply(other, sources)
	if (err == nil) != (otherErr == nil) || !reflect.DeepEqual(obj.Object, other.Object) {
		t.Fatalf("Apply is not deterministic: %v then %v", err, otherErr)
	}
	if err != nil {
		if !reflect.DeepEqual(obj.Object, before.Object) {
			t.Fatalf("Apply failed (%v) but changed the object", err)
		}
		return false
	}
	for _, field := range [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}} {
		if was, now := fieldState(before, field), fieldState(obj, field); was != now {
			t.Fatalf("Apply succeeded but changed %s from %s to %s", strings.Join(field, "."), was, now)
		}
	}
	if _, err := json.Marshal(obj.Object); err != nil {
		t.Fatalf("Apply succeeded but the object does not encode: %v", err)
	}
	return true
}

// fieldState describes the value of a field, its absence, or why it cannot
// be read.
func fieldState(obj *unstructured.Unstructured, path []string) string {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	switch {
	case err != nil:
		return "<invalid>"
	case !found:
		return "<unset>"
	}
	return fmt.Sprintf("%T %#v", v, v)
}

// pointerTokens splits a JSON pointer that starts with '/' into its
// unescaped tokens (independently of parsePointer).
func pointerTokens(p string) []string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// at returns the value at tokens in v.
func at(v any, tokens []string) (any, bool) {
	for _, tok := range tokens {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(c) || fmt.Sprint(i) != tok {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// encode returns v's JSON.
func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return string(b)
}
