package join_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/join"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		name    string
		values  []string
		want    []schema.GroupResource
		wantErr string
	}{
		{name: "none", values: nil, want: nil},
		{name: "core and grouped", values: []string{"configmaps,deployments.apps"},
			want: []schema.GroupResource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}},
		{name: "repeated flag, spaces, empty entries and duplicates", values: []string{" services ,", "services", "clonesets.apps.kruise.io"},
			want: []schema.GroupResource{{Resource: "services"}, {Group: "apps.kruise.io", Resource: "clonesets"}}},
		{name: "wildcard refused", values: []string{"*"}, wantErr: `invalid kind "*"`},
		{name: "subresource refused", values: []string{"deployments/scale"}, wantErr: `invalid kind "deployments/scale"`},
		{name: "group/version refused", values: []string{"apps/v1"}, wantErr: `invalid kind "apps/v1"`},
		{name: "no resource", values: []string{".apps"}, wantErr: `no resource`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := join.ParseKinds(tt.values)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseKinds(%q) error = %v, want %q", tt.values, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParseKinds(%q) = %v, %v; want %v", tt.values, got, err, tt.want)
			}
		})
	}
}

func TestResolveKinds(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1", Kind: "Job"},
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	tests := []struct {
		name         string
		kinds        []schema.GroupResource
		want         []schema.GroupResource
		wantWarnings int
		wantErr      string
	}{
		{name: "plural resources, sorted by group", kinds: []schema.GroupResource{{Group: "apps", Resource: "deployments"}, {Resource: "configmaps"}},
			want: []schema.GroupResource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}},
		{name: "singular and kind names become the resource, once", kinds: []schema.GroupResource{{Resource: "deployment"}, {Resource: "Deployment"}, {Resource: "service"}},
			want: []schema.GroupResource{{Resource: "services"}, {Group: "apps", Resource: "deployments"}}},
		{name: "qualified resource not served yet is kept with a warning", kinds: []schema.GroupResource{{Group: "apps.kruise.io", Resource: "clonesets"}, {Group: "batch", Resource: "jobs"}},
			want: []schema.GroupResource{{Group: "apps.kruise.io", Resource: "clonesets"}, {Group: "batch", Resource: "jobs"}}, wantWarnings: 1},
		{name: "unqualified unknown resource is an error", kinds: []schema.GroupResource{{Resource: "clonesets"}}, wantErr: `serves no resource "clonesets"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := join.ResolveKinds(mapper, tt.kinds)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveKinds(%v) error = %v, want %q", tt.kinds, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) || len(warnings) != tt.wantWarnings {
				t.Errorf("ResolveKinds(%v) = %v, %q, %v; want %v with %d warnings", tt.kinds, got, warnings, err, tt.want, tt.wantWarnings)
			}
		})
	}
}

// FuzzParseKinds: no --restrict-kinds value panics the parser, and what it
// accepts names a resource, no wildcard or subresource, each once.
func FuzzParseKinds(f *testing.F) {
	f.Add("deployments.apps,configmaps")
	f.Add(" ,*,a/b")
	f.Add("clonesets.apps.kruise.io,,services")
	f.Fuzz(func(t *testing.T, v string) {
		got, err := join.ParseKinds([]string{v})
		if err != nil {
			return
		}
		seen := map[schema.GroupResource]bool{}
		for _, gr := range got {
			if gr.Resource == "" || strings.ContainsAny(gr.String(), "/*: ") || seen[gr] {
				t.Fatalf("ParseKinds(%q) accepted %v", v, got)
			}
			seen[gr] = true
		}
	})
}
