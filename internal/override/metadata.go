package override

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// applyMetadataMap sets and then removes keys of metadata.<field> (labels
// or annotations). An emptied map is removed.
func applyMetadataMap(obj *unstructured.Unstructured, field string, ov *v1alpha1.MapOverrider) error {
	if len(ov.Set) == 0 && len(ov.Remove) == 0 {
		return nil
	}
	m, _, err := unstructured.NestedStringMap(obj.Object, "metadata", field)
	if err != nil {
		return fmt.Errorf("metadata.%s: %w", field, err)
	}
	if m == nil {
		m = make(map[string]string, len(ov.Set))
	}
	for k, v := range ov.Set {
		m[k] = v
	}
	for _, k := range ov.Remove {
		delete(m, k)
	}
	if len(m) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
		return nil
	}
	if err := unstructured.SetNestedStringMap(obj.Object, m, "metadata", field); err != nil {
		return fmt.Errorf("metadata.%s: %w", field, err)
	}
	return nil
}
