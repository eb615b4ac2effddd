package dispatch

import (
	"encoding/json"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memberDeployment reads testdata/member-deployment.json: a Deployment as
// a member's apiserver returns it after Flotilla's apply (defaults,
// managedFields, status).
func memberDeployment(tb testing.TB) *unstructured.Unstructured {
	tb.Helper()
	b, err := os.ReadFile("testdata/member-deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &obj.Object); err != nil {
		tb.Fatal(err)
	}
	return obj
}

// TestFixtureProjectionMatchesItsIntent checks the fixture's projection
// hash against the intent rendered from the same fields: the fast path
// holds for the common shape of a copy.
func TestFixtureProjectionMatchesItsIntent(t *testing.T) {
	live := memberDeployment(t)
	desired := live.DeepCopy()
	for _, f := range []string{"status"} {
		delete(desired.Object, f)
	}
	desired.SetAnnotations(nil)
	desired.SetLabels(map[string]string{"app": "wl-00001"})
	_ = unstructured.SetNestedField(desired.Object, nil, "spec", "template", "metadata", "creationTimestamp")
	in, err := Prepare(desired)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's label is made up: take the intent's.
	labels := live.GetLabels()
	labels[LabelTemplateHash] = in.Hash
	live.SetLabels(labels)
	p, _ := Project(live)
	if got := projectionHash(p.(*unstructured.Unstructured)); got != in.OwnedHash {
		t.Fatalf("projection hash %s, intent's %s: the fast path misses a plain copy", got, in.OwnedHash)
	}
}

func BenchmarkProject(b *testing.B) {
	live := memberDeployment(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Project(live); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrepare(b *testing.B) {
	live := memberDeployment(b)
	delete(live.Object, "status")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(live); err != nil {
			b.Fatal(err)
		}
	}
}
