package dispatch

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func configMap(data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": "cfg", "namespace": "ns", "uid": "host-uid", "resourceVersion": "42",
			"finalizers": []any{v1alpha1.FinalizerPropagation}, "labels": map[string]any{"app": "x"},
		},
		"data":   map[string]any{"k": data},
		"status": map[string]any{"ignored": true},
	}}
}

func TestPrepare(t *testing.T) {
	desired := configMap("v1")
	before := desired.DeepCopy()
	in, err := Prepare(desired)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(desired, before) {
		t.Error("Prepare modified its input")
	}
	obj := in.Object
	for _, f := range []string{"uid", "resourceVersion", "finalizers"} {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", f); found {
			t.Errorf("metadata.%s kept", f)
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status"); found {
		t.Error("status kept")
	}
	labels := obj.GetLabels()
	if labels["app"] != "x" || labels[v1alpha1.LabelManaged] != "true" || labels[LabelTemplateHash] != in.Hash || len(in.Hash) != 16 {
		t.Errorf("labels %v, hash %q", labels, in.Hash)
	}

	same, err := Prepare(configMap("v1"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := Prepare(configMap("v2"))
	if err != nil {
		t.Fatal(err)
	}
	if same.Hash != in.Hash {
		t.Errorf("the same object hashed %q and %q", in.Hash, same.Hash)
	}
	if other.Hash == in.Hash {
		t.Error("different data hashed the same")
	}
	// Preparing a prepared object changes nothing (the hash excludes itself).
	again, err := Prepare(in.Object)
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash != in.Hash || !equality.Semantic.DeepEqual(again.Object, in.Object) {
		t.Errorf("re-preparing changed the intent: %q vs %q", again.Hash, in.Hash)
	}
}
