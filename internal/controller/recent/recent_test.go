package recent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func fo(rv, basis string) *v1alpha1.FederatedObject {
	return &v1alpha1.FederatedObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: rv},
		Status:     v1alpha1.FederatedObjectStatus{SchedulingBasis: basis},
	}
}

func TestFresh(t *testing.T) {
	tests := []struct {
		name      string
		observed  *v1alpha1.FederatedObject // delivered by the informer before the read, if any
		deleted   bool
		cached    *v1alpha1.FederatedObject
		wantRV    string
		wantBasis string
		wantKept  int
	}{
		{name: "cache behind the write", cached: fo("1", "old"), wantRV: "2", wantBasis: "new", wantKept: 1},
		{name: "cache caught up", cached: fo("2", "new"), wantRV: "2", wantBasis: "new", wantKept: 0},
		{name: "cache past the write", cached: fo("3", "other"), wantRV: "3", wantBasis: "other", wantKept: 0},
		{name: "informer delivered the write", observed: fo("2", "new"), cached: fo("2", "new"), wantRV: "2", wantBasis: "new", wantKept: 0},
		{name: "informer delivered an older version", observed: fo("1", "old"), cached: fo("1", "old"), wantRV: "2", wantBasis: "new", wantKept: 1},
		{name: "object deleted", observed: fo("1", "old"), deleted: true, cached: fo("1", "old"), wantRV: "1", wantBasis: "old", wantKept: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Writes[*v1alpha1.FederatedObject]
			w.Wrote("1", fo("2", "new"))
			if tt.observed != nil {
				w.Observed(tt.observed, tt.deleted)
			}
			got := w.Fresh(tt.cached)
			if got.ResourceVersion != tt.wantRV || got.Status.SchedulingBasis != tt.wantBasis {
				t.Errorf("Fresh = rv %s basis %q, want rv %s basis %q", got.ResourceVersion, got.Status.SchedulingBasis, tt.wantRV, tt.wantBasis)
			}
			if n := w.Len(); n != tt.wantKept {
				t.Errorf("%d writes kept, want %d", n, tt.wantKept)
			}
		})
	}
}

func TestFreshReturnsACopy(t *testing.T) {
	var w Writes[*v1alpha1.FederatedObject]
	w.Wrote("1", fo("2", "new"))
	got := w.Fresh(fo("1", "old"))
	got.Status.SchedulingBasis = "changed by the caller"
	if again := w.Fresh(fo("1", "old")); again.Status.SchedulingBasis != "new" {
		t.Errorf("a caller's change leaked into the remembered write: %q", again.Status.SchedulingBasis)
	}
}
