package federate

import (
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestGoneRelease: a template that is gone keeps its member copies when
// its FederatedObject recorded the orphan choice or the template cache saw
// it deleted with the orphan annotation; otherwise the copies go with it.
func TestGoneRelease(t *testing.T) {
	tests := []struct {
		name        string
		recorded    string
		finalOrphan bool
		want        string
	}{
		{"nothing recorded, plain delete", "", false, v1alpha1.ReleaseDelete},
		{"annotated long before the delete", v1alpha1.ReleaseOrphan, true, v1alpha1.ReleaseOrphan},
		{"annotated just before the delete (only the cache saw it)", "", true, v1alpha1.ReleaseOrphan},
		{"deleted while the controller-manager was down (only the record)", v1alpha1.ReleaseOrphan, false, v1alpha1.ReleaseOrphan},
		{"an earlier release mode delete", v1alpha1.ReleaseDelete, false, v1alpha1.ReleaseDelete},
		{"an earlier release mode delete, deleted with the annotation", v1alpha1.ReleaseDelete, true, v1alpha1.ReleaseOrphan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := goneRelease(tt.recorded, tt.finalOrphan); got != tt.want {
				t.Errorf("goneRelease(%q, %v) = %q, want %q", tt.recorded, tt.finalOrphan, got, tt.want)
			}
		})
	}
}
