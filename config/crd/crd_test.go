package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestUpToDate(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		if c.Name == "memberclusters.flotilla.io" {
			crd = c
		}
	}
	if crd == nil || len(crd.Spec.Versions[0].AdditionalPrinterColumns) == 0 {
		t.Fatal("no embedded MemberCluster CRD with printer columns")
	}
	// live is what the apiserver returns for crd: defaults applied, its
	// own metadata added.
	live := func(edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		l := crd.DeepCopy()
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(l)
		l.ResourceVersion, l.Generation, l.UID = "42", 3, "uid"
		l.Status.StoredVersions = []string{"v1alpha1"}
		if edit != nil {
			edit(l)
		}
		return l
	}
	tests := []struct {
		name string
		live *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		{name: "as installed (defaults, status, metadata)", live: live(nil), want: true},
		{name: "others' labels and annotations", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			l.Labels = map[string]string{"team": "platform"}
			l.Annotations["note"] = "x"
		}), want: true},
		{name: "older printer columns", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			v := &l.Spec.Versions[0]
			v.AdditionalPrinterColumns = v.AdditionalPrinterColumns[:len(v.AdditionalPrinterColumns)-1]
		}), want: false},
		{name: "a schema description changed", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			l.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "older"
		}), want: false},
		{name: "a property more (a newer or edited CRD)", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			l.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["extra"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}), want: false},
		{name: "controller-gen annotation differs", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			for k := range l.Annotations {
				l.Annotations[k] = "v0.0.1"
			}
		}), want: false},
		{name: "conversion strategy changed", live: live(func(l *apiextensionsv1.CustomResourceDefinition) {
			l.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UpToDate(crd, tt.live); got != tt.want {
				t.Errorf("UpToDate() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCRDsParse(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == "" || len(c.Spec.Versions) == 0 || c.Spec.Versions[0].Schema == nil {
			t.Errorf("CRD %q lacks a name, versions or a schema", c.Name)
		}
		if len(c.Annotations) == 0 {
			t.Errorf("CRD %s has no annotations (controller-gen's version is expected)", c.Name)
		}
	}
}
