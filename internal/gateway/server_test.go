package gateway

import (
	"testing"

	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// TestWithoutTracing: the gateway's chain is built without the tracing
// filter, and every other feature is as the process's gate says.
func TestWithoutTracing(t *testing.T) {
	g := withoutTracing{utilfeature.DefaultFeatureGate}
	if !utilfeature.DefaultFeatureGate.Enabled(genericfeatures.APIServerTracing) {
		t.Fatal("APIServerTracing is off in the process's gate: this test no longer checks anything")
	}
	if g.Enabled(genericfeatures.APIServerTracing) {
		t.Error("APIServerTracing is on in the gateway's gate")
	}
	for f := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		if f == genericfeatures.APIServerTracing {
			continue
		}
		if got, want := g.Enabled(f), utilfeature.DefaultFeatureGate.Enabled(f); got != want {
			t.Errorf("%s: %v in the gateway's gate, %v in the process's", f, got, want)
		}
	}
}
