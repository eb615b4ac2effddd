package render

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// hostMeta is metadata as the host's apiserver returns it.
func hostMeta(name string, extra map[string]any) map[string]any {
	m := map[string]any{
		"name":              name,
		"namespace":         "shop",
		"uid":               "7d0e6c1a-0000-4000-8000-000000000001",
		"resourceVersion":   "4711",
		"generation":        int64(3),
		"creationTimestamp": "2025-01-01T00:00:00Z",
		"selfLink":          "/apis/apps/v1/namespaces/shop/deployments/" + name,
		"labels":            map[string]any{"app": name},
		"annotations":       map[string]any{"note": "keep"},
		"finalizers":        []any{v1alpha1.FinalizerPropagation},
		"ownerReferences":   []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}},
		"managedFields":     []any{map[string]any{"manager": "kubectl", "operation": "Update"}},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func newDeployment(replicas any, annotations map[string]any) *unstructured.Unstructured {
	extra := map[string]any{}
	if annotations != nil {
		extra["annotations"] = annotations
	}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1.25"},
			}},
		},
	}
	if replicas != nil {
		spec["replicas"] = replicas
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": hostMeta("web", extra),
		"spec":     spec,
		"status":   map[string]any{"replicas": int64(6), "readyReplicas": int64(6)},
	}}
}

func replicasOf(t *testing.T, obj *unstructured.Unstructured) (int64, bool) {
	t.Helper()
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil {
		t.Fatalf("spec.replicas: %v", err)
	}
	return n, found
}

func TestRenderReplicas(t *testing.T) {
	retain := map[string]any{v1alpha1.AnnotationRetainReplicas: "true"}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"},
		"spec":     map[string]any{"replicas": int64(5)},
	}}
	configMap := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "shop"},
		"data":     map[string]any{"k": "v"},
	}}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "once", "namespace": "shop"},
		"spec":     map[string]any{"parallelism": int64(2), "template": map[string]any{}},
	}}
	tests := []struct {
		name      string
		template  *unstructured.Unstructured
		replicas  *int32
		want      int64
		wantFound bool
	}{
		{"divide sets the cluster's share", newDeployment(int64(6), nil), ptr.To[int32](2), 2, true},
		{"share of zero", newDeployment(int64(6), nil), ptr.To[int32](0), 0, true},
		{"share set when the template has no replicas", newDeployment(nil, nil), ptr.To[int32](3), 3, true},
		{"no share keeps the template's replicas", newDeployment(int64(6), nil), nil, 6, true},
		{"retain-replicas still sets the share (the initial value; the member keeps its own later)", newDeployment(int64(6), retain), ptr.To[int32](2), 2, true},
		{"retain-replicas other than true is ignored", newDeployment(int64(6), map[string]any{v1alpha1.AnnotationRetainReplicas: "false"}), ptr.To[int32](2), 2, true},
		{"custom kind with integer replicas", widget, ptr.To[int32](1), 1, true},
		{"kind without replicas is untouched", configMap, ptr.To[int32](2), 0, false},
		{"native kind without replicas is untouched", job, ptr.To[int32](2), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: tt.template, Placement: v1alpha1.ClusterPlacement{Cluster: "member-1", Replicas: tt.replicas}})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			n, found := replicasOf(t, got)
			if found != tt.wantFound || n != tt.want {
				t.Errorf("spec.replicas = %d (found %v), want %d (found %v)", n, found, tt.want, tt.wantFound)
			}
		})
	}
	if !RetainsReplicas(newDeployment(int64(6), retain)) || RetainsReplicas(newDeployment(int64(6), nil)) {
		t.Errorf("RetainsReplicas does not follow the %s annotation", v1alpha1.AnnotationRetainReplicas)
	}
	// The ConfigMap gained no spec.
	got, _ := Render(Input{Template: configMap, Placement: v1alpha1.ClusterPlacement{Replicas: ptr.To[int32](2)}})
	if _, ok := got.Object["spec"]; ok {
		t.Errorf("ConfigMap gained a spec: %v", got.Object["spec"])
	}
}

func TestRenderOverrides(t *testing.T) {
	tag := []override.Source{{Policy: "OverridePolicy/shop/eu", Overriders: v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Tag: "1.28"}}}}}
	replicas := []override.Source{{Policy: "ClusterOverridePolicy/pin", Overriders: v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
		{Op: "replace", Path: "/spec/replicas", Value: &apiextensionsv1.JSON{Raw: []byte("7")}},
	}}}}
	missing := []override.Source{{Policy: "OverridePolicy/shop/bad", Rule: 2, Overriders: v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
		{Op: "remove", Path: "/spec/nothing"},
	}}}}
	rename := []override.Source{{Policy: "OverridePolicy/shop/rename", Overriders: v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
		{Op: "replace", Path: "/metadata/name", Value: &apiextensionsv1.JSON{Raw: []byte(`"other"`)}},
	}}}}
	tests := []struct {
		name         string
		overrides    []override.Source
		wantImage    string
		wantReplicas int64
		wantErr      string
	}{
		{"no overrides", nil, "nginx:1.25", 2, ""},
		{"image tag", tag, "nginx:1.28", 2, ""},
		{"overrides apply after the share", replicas, "nginx:1.25", 7, ""},
		{"in order", append(append([]override.Source{}, tag...), replicas...), "nginx:1.28", 7, ""},
		{"failing rule", missing, "", 0, "OverridePolicy/shop/bad rule 2"},
		{"identity cannot change", rename, "", 0, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := newDeployment(int64(6), nil)
			before := template.DeepCopy()
			got, err := Render(Input{Template: template, Placement: v1alpha1.ClusterPlacement{Cluster: "member-1", Replicas: ptr.To[int32](2)}, Overrides: tt.overrides})
			if !reflect.DeepEqual(template.Object, before.Object) {
				t.Errorf("Render modified the template")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Render error = %v, want one containing %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("Render returned an object with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
			if len(containers) != 1 {
				t.Fatalf("containers = %v", containers)
			}
			if image := containers[0].(map[string]any)["image"]; image != tt.wantImage {
				t.Errorf("image = %v, want %s", image, tt.wantImage)
			}
			if n, _ := replicasOf(t, got); n != tt.wantReplicas {
				t.Errorf("spec.replicas = %d, want %d", n, tt.wantReplicas)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "uid"); found {
				t.Errorf("the rendered object kept metadata.uid")
			}
		})
	}
}

// TestRenderStatefulSetRollout: a held StatefulSet copy is partitioned
// above every position and marked held; a rolling
// one keeps the template's partition, and gets its share as
// maxUnavailable only when the template sets one.
func TestRenderStatefulSetRollout(t *testing.T) {
	sts := func(maxUnavailable bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": "db", "namespace": "shop"}, "spec": map[string]any{"replicas": int64(30)}}}
		if maxUnavailable {
			_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
		}
		return u
	}
	share := &rollout.Budget{Unavailable: 2}
	tests := []struct {
		name          string
		tmpl          *unstructured.Unstructured
		d             rollout.Directive
		wantPartition int64 // -1: none
		wantHeld      bool
		wantMax       int64 // -1: none
	}{
		{"as is", sts(false), rollout.Directive{Revision: "r1"}, -1, false, -1},
		{"held above every position", sts(false), rollout.Directive{Revision: "r1", Hold: true}, math.MaxInt32, true, -1},
		{"a share, no maxUnavailable in the template", sts(false), rollout.Directive{Revision: "r1", Share: share}, -1, false, -1},
		{"a share replaces the template's maxUnavailable", sts(true), rollout.Directive{Revision: "r1", Share: share}, -1, false, 2},
		{"OnDelete (an override's, say): no partition", onDelete(sts(false)), rollout.Directive{Revision: "r1", Hold: true}, -1, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: tt.tmpl, Placement: v1alpha1.ClusterPlacement{Cluster: "a", Replicas: ptr.To[int32](10)}, Rollout: &tt.d})
			if err != nil {
				t.Fatal(err)
			}
			partition, found, _ := unstructured.NestedInt64(got.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
			if !found {
				partition = -1
			}
			maxU, found, _ := unstructured.NestedInt64(got.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
			if !found {
				maxU = -1
			}
			held := got.GetAnnotations()[v1alpha1.AnnotationHeld] == "true"
			if partition != tt.wantPartition || held != tt.wantHeld || maxU != tt.wantMax || got.GetLabels()[v1alpha1.LabelRevision] != "r1" {
				t.Errorf("partition %d held %v maxUnavailable %d labels %v; want %d %v %d and the revision label", partition, held, maxU, got.GetLabels(), tt.wantPartition, tt.wantHeld, tt.wantMax)
			}
		})
	}
}

// recreate sets a Deployment's strategy type to Recreate.
func recreate(u *unstructured.Unstructured) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(u.Object, "Recreate", "spec", "strategy", "type")
	return u
}

// onDelete sets a StatefulSet's updateStrategy type to OnDelete.
func onDelete(u *unstructured.Unstructured) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(u.Object, "OnDelete", "spec", "updateStrategy", "type")
	return u
}

func TestRenderRolloutDirective(t *testing.T) {
	dep := func(paused bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": int64(10)}}}
		if paused {
			_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
		}
		return u
	}
	tests := []struct {
		name       string
		tmpl       *unstructured.Unstructured
		d          rollout.Directive
		wantPaused bool
		wantHeld   bool
		wantShare  string
	}{
		{"as is", dep(false), rollout.Directive{Revision: "r1"}, false, false, ""},
		{"held", dep(false), rollout.Directive{Revision: "r1", Hold: true}, true, true, ""},
		{"held while the host is paused: not marked held", dep(true), rollout.Directive{Revision: "r1", Hold: true}, true, false, ""},
		{"a share", dep(false), rollout.Directive{Revision: "r1", Share: &rollout.Budget{Surge: 1, Unavailable: 2}}, false, false, "1/2"},
		{"Recreate (an override's, say): no share", recreate(dep(false)), rollout.Directive{Revision: "r1", Share: &rollout.Budget{Surge: 1, Unavailable: 2}}, false, false, ""},
		{"Recreate, held: paused", recreate(dep(false)), rollout.Directive{Revision: "r1", Hold: true}, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(Input{Template: tt.tmpl, Rollout: &tt.d})
			if want := strategyType(tt.tmpl, "strategy"); strategyType(got, "strategy") != want {
				t.Errorf("strategy type %q, want the template's %q", strategyType(got, "strategy"), want)
			}
			if err != nil {
				t.Fatal(err)
			}
			paused, _, _ := unstructured.NestedBool(got.Object, "spec", "paused")
			held := got.GetAnnotations()[v1alpha1.AnnotationHeld] == "true"
			s, _, _ := unstructured.NestedInt64(got.Object, "spec", "strategy", "rollingUpdate", "maxSurge")
			u, _, _ := unstructured.NestedInt64(got.Object, "spec", "strategy", "rollingUpdate", "maxUnavailable")
			share := ""
			if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "strategy", "rollingUpdate"); found {
				share = fmt.Sprintf("%d/%d", s, u)
			}
			if paused != tt.wantPaused || held != tt.wantHeld || share != tt.wantShare || got.GetLabels()[v1alpha1.LabelRevision] != "r1" {
				t.Errorf("paused %v held %v share %q labels %v; want paused %v held %v share %q and the revision label", paused, held, share, got.GetLabels(), tt.wantPaused, tt.wantHeld, tt.wantShare)
			}
		})
	}
}
