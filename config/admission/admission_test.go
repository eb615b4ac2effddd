package admission

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLoadEmbeddedPolicies(t *testing.T) {
	for _, tt := range []struct {
		sets []Set
		want []string
	}{
		{nil, []string{AcceptGuardName, DeletionProtectionName, ScaleDownProtectionName}},
		{[]Set{ScaleDownProtection}, []string{ScaleDownProtectionName}},
		{[]Set{DeletionProtection}, []string{DeletionProtectionName}},
		{[]Set{AcceptGuard}, []string{AcceptGuardName}},
	} {
		p, err := Load(tt.sets...)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Policies) != len(tt.want) || len(p.Bindings) != len(tt.want) {
			t.Fatalf("Load(%v): %d policies and %d bindings, want %d each", tt.sets, len(p.Policies), len(p.Bindings), len(tt.want))
		}
		for i, name := range tt.want {
			if p.Policies[i].Name != name || p.Bindings[i].Spec.PolicyName != name {
				t.Errorf("Load(%v)[%d]: policy %q bound as %q, want %q", tt.sets, i, p.Policies[i].Name, p.Bindings[i].Spec.PolicyName, name)
			}
			for _, o := range []metav1.Object{p.Policies[i], p.Bindings[i]} {
				if o.GetAnnotations()[AnnotationManifestHash] == "" {
					t.Errorf("%s has no manifest hash", o.GetName())
				}
			}
		}
	}
}
