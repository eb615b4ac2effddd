package templates

import (
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// version returns a Deployment (generation > 0) or a ConfigMap
// (generation 0) at a resourceVersion; change edits it further.
func version(kind, rv string, generation int64, change func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	apiVersion := "apps/v1"
	if kind == "ConfigMap" {
		apiVersion = "v1"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetResourceVersion(rv)
	u.SetGeneration(generation)
	u.SetLabels(map[string]string{"app": "web"})
	u.SetAnnotations(map[string]string{"note": "a"})
	u.SetFinalizers([]string{v1alpha1.FinalizerPropagation})
	if kind == "ConfigMap" {
		u.Object["data"] = map[string]any{"k": "v1"}
	} else {
		u.Object["spec"] = map[string]any{"replicas": int64(3)}
		u.Object["status"] = map[string]any{"readyReplicas": int64(1)}
	}
	if change != nil {
		change(u)
	}
	return u
}

func TestRelevant(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	deploy := func(rv string, gen int64, change func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return version("Deployment", rv, gen, change)
	}
	cm := func(rv string, change func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return version("ConfigMap", rv, 0, change)
	}
	tests := []struct {
		name     string
		old, obj *unstructured.Unstructured
		want     bool
	}{
		{"same resourceVersion (resync)", deploy("5", 2, nil), deploy("5", 2, nil), false},
		{"same resourceVersion even if the content differs", cm("5", nil), cm("5", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"k": "v2"} }), false},
		{"generation bump", deploy("5", 2, nil), deploy("6", 3, func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"replicas": int64(4)} }), true},
		{"status-only change", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"readyReplicas": int64(3)} }), false},
		{"generation-0 data change", cm("5", nil), cm("6", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"k": "v2"} }), true},
		{"generation-0 change of nothing visible", cm("5", nil), cm("6", nil), true},
		{"label added", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"app": "web", v1alpha1.LabelPropagationPolicy: "p"})
		}), true},
		{"label removed", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) { u.SetLabels(nil) }), true},
		{"annotation changed", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"note": "b"})
		}), true},
		{"finalizer removed", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }), true},
		{"finalizer added", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{v1alpha1.FinalizerPropagation, "example.com/other"})
		}), true},
		{"deletion started", deploy("5", 2, nil), deploy("6", 2, func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&deleted) }), true},
		{"deletion timestamp unchanged", deploy("5", 2, func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&deleted) }),
			deploy("6", 2, func(u *unstructured.Unstructured) {
				u.SetDeletionTimestamp(&deleted)
				u.Object["status"] = map[string]any{"readyReplicas": int64(0)}
			}), false},
		{"empty and missing labels are the same", deploy("5", 2, func(u *unstructured.Unstructured) { u.SetLabels(nil) }),
			deploy("6", 2, func(u *unstructured.Unstructured) {
				u.SetLabels(nil)
				_ = unstructured.SetNestedStringMap(u.Object, map[string]string{}, "metadata", "labels")
			}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Relevant(tt.old, tt.obj); got != tt.want {
				t.Errorf("Relevant = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExcluded(t *testing.T) {
	tests := []struct {
		group, resource string
		want            bool
	}{
		{"", "events", true},
		{"events.k8s.io", "events", true},
		{"coordination.k8s.io", "leases", true},
		{"flotilla.io", "propagationpolicies", true},
		{"flotilla.io", "memberclusters", true},
		{"flotilla.io", "federatedobjects", true},
		{"", "endpoints", true},
		{"discovery.k8s.io", "endpointslices", true},
		{"", "nodes", true},
		{"", "componentstatuses", true},
		{"apps", "controllerrevisions", true},
		{"storage.k8s.io", "volumeattachments", true},
		{"networking.k8s.io", "ipaddresses", true},
		{"metrics.k8s.io", "pods", true},
		{"apps", "deployments", false},
		{"", "configmaps", false},
		{"", "secrets", false},
		{"", "services", false},
		{"", "namespaces", false},
		{"apiextensions.k8s.io", "customresourcedefinitions", false},
		{"example.com", "widgets", false},
		{"networking.k8s.io", "ingresses", false},
		{"storage.k8s.io", "storageclasses", false},
		// A resource name excluded in one group is not excluded in another.
		{"example.com", "nodes", false},
		{"example.com", "events", false},
		{"", "controllerrevisions", false},
	}
	for _, tt := range tests {
		name := tt.resource + "." + tt.group
		if tt.group == "" {
			name = tt.resource
		}
		t.Run(name, func(t *testing.T) {
			if got := Excluded(tt.group, tt.resource); got != tt.want {
				t.Errorf("Excluded(%q, %q) = %v, want %v", tt.group, tt.resource, got, tt.want)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	tests := []struct {
		name            string
		annotations     map[string]string
		managed         bool
		wantAnnotations map[string]string
	}{
		{"last-applied was the only annotation", map[string]string{LastApplied: `{"kind":"ConfigMap"}`}, true, nil},
		{"other annotations stay", map[string]string{LastApplied: "{}", "note": "keep"}, true, map[string]string{"note": "keep"}},
		{"no last-applied", map[string]string{"note": "keep"}, false, map[string]string{"note": "keep"}},
		{"no annotations", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := version("ConfigMap", "5", 0, nil)
			u.SetAnnotations(tt.annotations)
			if tt.managed {
				u.SetManagedFields(managed)
			}
			out, err := trim(u)
			if err != nil {
				t.Fatalf("trim: %v", err)
			}
			got, ok := out.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("trim returned %T", out)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "managedFields"); found {
				t.Errorf("managedFields kept")
			}
			if a := got.GetAnnotations(); !reflect.DeepEqual(a, tt.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", a, tt.wantAnnotations)
			}
			if tt.wantAnnotations == nil {
				if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "annotations"); found {
					t.Errorf("metadata.annotations kept as an empty map")
				}
			}
			if got.GetName() != "web" || got.GetResourceVersion() != "5" || got.GetLabels()["app"] != "web" {
				t.Errorf("trim changed other metadata: %v", got.Object["metadata"])
			}
			if d, _, _ := unstructured.NestedString(got.Object, "data", "k"); d != "v1" {
				t.Errorf("data.k = %q, want v1", d)
			}
		})
	}
	t.Run("not unstructured", func(t *testing.T) {
		in := "tombstone"
		out, err := trim(in)
		if err != nil || out != any(in) {
			t.Errorf("trim(%q) = %v, %v; want it returned unchanged", in, out, err)
		}
	})
}

func TestLabelIndex(t *testing.T) {
	obj := func(namespace string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetNamespace(namespace)
		u.SetName("cfg")
		u.SetLabels(labels)
		return u
	}
	pp, cpp := v1alpha1.LabelPropagationPolicy, v1alpha1.LabelClusterPropagationPolicy
	tests := []struct {
		name       string
		label      string
		namespaced bool
		obj        any
		want       []string
	}{
		{"namespaced label", pp, true, obj("shop", map[string]string{pp: "web"}), []string{"shop/web"}},
		{"namespaced label on a cluster-scoped object", pp, true, obj("", map[string]string{pp: "web"}), nil},
		{"cluster label", cpp, false, obj("shop", map[string]string{cpp: "global"}), []string{"global"}},
		{"cluster label on a cluster-scoped object", cpp, false, obj("", map[string]string{cpp: "global"}), []string{"global"}},
		{"empty value", pp, true, obj("shop", map[string]string{pp: ""}), nil},
		{"other label only", pp, true, obj("shop", map[string]string{cpp: "global"}), nil},
		{"no labels", cpp, false, obj("shop", nil), nil},
		{"not unstructured", pp, true, "tombstone", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := labelIndex(tt.label, tt.namespaced)(tt.obj)
			if err != nil {
				t.Fatalf("index: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("index = %q, want %q", got, tt.want)
			}
		})
	}
}
