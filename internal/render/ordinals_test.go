package render

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
)

func TestRenderOrdinalStart(t *testing.T) {
	sts := func(apiVersion string, ordinals map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"replicas": int64(6), "selector": map[string]any{"matchLabels": map[string]any{"app": "db"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "db"}}}}
		if ordinals != nil {
			spec["ordinals"] = ordinals
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "StatefulSet",
			"metadata": map[string]any{"name": "db", "namespace": "shop"}, "spec": spec}}
	}
	pin := []override.Source{{Policy: "OverridePolicy/shop/pin", Overriders: v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
		{Op: "add", Path: "/spec/ordinals", Value: &apiextensionsv1.JSON{Raw: []byte(`{"start":100}`)}},
	}}}}
	tests := []struct {
		name      string
		template  *unstructured.Unstructured
		start     *int32
		overrides []override.Source
		want      any // spec.ordinals.start, nil when absent
		wantOrd   bool
	}{
		{"a range's start", sts("apps/v1", nil), ptr.To[int32](4), nil, int64(4), true},
		{"the first range leaves the default", sts("apps/v1", nil), ptr.To[int32](0), nil, nil, false},
		{"the template's start 0 is dropped with it", sts("apps/v1", map[string]any{"start": int64(0)}), ptr.To[int32](0), nil, nil, false},
		{"the template's base is replaced by the range", sts("apps/v1", map[string]any{"start": int64(10)}), ptr.To[int32](12), nil, int64(12), true},
		{"no range: the template's own", sts("apps/v1", map[string]any{"start": int64(10)}), nil, nil, int64(10), true},
		{"another group's StatefulSet is not touched", sts("apps.kruise.io/v1beta1", nil), ptr.To[int32](4), nil, nil, false},
		{"an override wins", sts("apps/v1", nil), ptr.To[int32](4), pin, int64(100), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: tt.template, Placement: v1alpha1.ClusterPlacement{Cluster: "m", Replicas: ptr.To[int32](2), OrdinalStart: tt.start}, Overrides: tt.overrides})
			if err != nil {
				t.Fatal(err)
			}
			v, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "ordinals", "start")
			if found != (tt.want != nil) || (found && v != tt.want) {
				t.Errorf("spec.ordinals.start = %v (found %v), want %v", v, found, tt.want)
			}
			if _, found := got.Object["spec"].(map[string]any)["ordinals"]; found != tt.wantOrd {
				t.Errorf("spec.ordinals present = %v, want %v", found, tt.wantOrd)
			}
		})
	}
}

func TestRenderDividedJob(t *testing.T) {
	job := func(mode string) *unstructured.Unstructured {
		spec := map[string]any{"completions": int64(6), "parallelism": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "work", "image": "w", "env": []any{map[string]any{"name": "A", "value": "1"}}},
			}}}}
		if mode != "" {
			spec["completionMode"] = mode
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "crunch", "namespace": "shop"}, "spec": spec}}
	}
	got, err := Render(Input{Template: job("Indexed"), Placement: v1alpha1.ClusterPlacement{Cluster: "m", Replicas: ptr.To[int32](2), OrdinalStart: ptr.To[int32](4)}})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedInt64(got.Object, "spec", "completions"); c != 2 {
		t.Errorf("completions = %d, want the share 2", c)
	}
	if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "parallelism"); p != 1 {
		t.Errorf("parallelism = %d, want 1 (3 x 2/6)", p)
	}
	cs, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
	env := cs[0].(map[string]any)["env"].([]any)
	if len(env) != 2 || env[1].(map[string]any)["name"] != "FLOTILLA_COMPLETION_INDEX_OFFSET" || env[1].(map[string]any)["value"] != "4" {
		t.Errorf("env = %v, want A and the offset 4", env)
	}
	got, err = Render(Input{Template: job(""), Placement: v1alpha1.ClusterPlacement{Cluster: "m", Replicas: ptr.To[int32](5)}})
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "parallelism"); p != 3 {
		t.Errorf("parallelism = %d, want 3 (3 x 5/6 rounded up)", p)
	}
	cs, _, _ = unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
	if env := cs[0].(map[string]any)["env"].([]any); len(env) != 1 {
		t.Errorf("a non-indexed Job's env = %v, want the template's", env)
	}
}

func TestRenderPartitionCountsTheFederationsOrdinals(t *testing.T) {
	sts := func(partition, base int64) *unstructured.Unstructured {
		spec := map[string]any{"replicas": int64(6), "updateStrategy": map[string]any{"type": "RollingUpdate",
			"rollingUpdate": map[string]any{"partition": partition}}}
		if base > 0 {
			spec["ordinals"] = map[string]any{"start": base}
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": "db", "namespace": "shop"}, "spec": spec}}
	}
	tests := []struct {
		name                   string
		partition, base, start int64
		want                   int64
	}{
		{"the first range keeps the partition", 2, 0, 0, 2},
		{"a range at the partition updates all", 2, 0, 2, 0},
		{"a range past the partition updates all", 2, 0, 4, 0},
		{"a range across the partition updates its upper part", 3, 0, 2, 1},
		{"from the template's base", 3, 10, 12, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: sts(tt.partition, tt.base), Placement: v1alpha1.ClusterPlacement{Cluster: "m", Replicas: ptr.To[int32](2), OrdinalStart: ptr.To(int32(tt.start))}})
			if err != nil {
				t.Fatal(err)
			}
			if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "updateStrategy", "rollingUpdate", "partition"); p != tt.want {
				t.Errorf("partition = %d, want %d", p, tt.want)
			}
		})
	}
}
