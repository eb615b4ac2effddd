package admission

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLoadEmbeddedPolicies(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Policies) != 1 || len(p.Bindings) != 1 {
		t.Fatalf("loaded %d policies and %d bindings, want 1 and 1", len(p.Policies), len(p.Bindings))
	}
	if p.Bindings[0].Spec.PolicyName != p.Policies[0].Name {
		t.Errorf("binding refers to %q, policy is %q", p.Bindings[0].Spec.PolicyName, p.Policies[0].Name)
	}
	for _, o := range []metav1.Object{p.Policies[0], p.Bindings[0]} {
		if o.GetAnnotations()[AnnotationManifestHash] == "" {
			t.Errorf("%s has no manifest hash", o.GetName())
		}
	}
}
