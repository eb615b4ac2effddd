package member

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestSortAPIResources(t *testing.T) {
	r := func(group, version, resource string) v1alpha1.APIResource {
		return v1alpha1.APIResource{Group: group, Version: version, Resource: resource, Kind: "K" + resource, Scope: v1alpha1.ScopeNamespaced}
	}
	tests := []struct {
		name string
		in   []v1alpha1.APIResource
		want []v1alpha1.APIResource
	}{
		{name: "nil", in: nil, want: nil},
		{name: "one", in: []v1alpha1.APIResource{r("apps", "v1", "deployments")}, want: []v1alpha1.APIResource{r("apps", "v1", "deployments")}},
		{
			name: "core group first, then groups by name",
			in:   []v1alpha1.APIResource{r("batch", "v1", "jobs"), r("apps", "v1", "deployments"), r("", "v1", "pods")},
			want: []v1alpha1.APIResource{r("", "v1", "pods"), r("apps", "v1", "deployments"), r("batch", "v1", "jobs")},
		},
		{
			name: "group before version before resource",
			in: []v1alpha1.APIResource{
				r("b", "v1", "a"),
				r("a", "v2", "a"),
				r("a", "v1", "z"),
				r("a", "v1", "b"),
				r("a", "v1beta1", "a"),
			},
			want: []v1alpha1.APIResource{
				r("a", "v1", "b"),
				r("a", "v1", "z"),
				r("a", "v1beta1", "a"),
				r("a", "v2", "a"),
				r("b", "v1", "a"),
			},
		},
		{
			name: "resource, not kind, orders within a version",
			in: []v1alpha1.APIResource{
				{Group: "x", Version: "v1", Kind: "Alpha", Resource: "zetas", Scope: v1alpha1.ScopeCluster},
				{Group: "x", Version: "v1", Kind: "Zeta", Resource: "alphas", Scope: v1alpha1.ScopeNamespaced},
			},
			want: []v1alpha1.APIResource{
				{Group: "x", Version: "v1", Kind: "Zeta", Resource: "alphas", Scope: v1alpha1.ScopeNamespaced},
				{Group: "x", Version: "v1", Kind: "Alpha", Resource: "zetas", Scope: v1alpha1.ScopeCluster},
			},
		},
		{
			name: "a discovery list in server order",
			in: []v1alpha1.APIResource{
				r("", "v1", "services"), r("", "v1", "configmaps"), r("", "v1", "namespaces"),
				r("autoscaling", "v2", "horizontalpodautoscalers"), r("autoscaling", "v1", "horizontalpodautoscalers"),
				r("apps", "v1", "statefulsets"), r("apps", "v1", "deployments"),
			},
			want: []v1alpha1.APIResource{
				r("", "v1", "configmaps"), r("", "v1", "namespaces"), r("", "v1", "services"),
				r("apps", "v1", "deployments"), r("apps", "v1", "statefulsets"),
				r("autoscaling", "v1", "horizontalpodautoscalers"), r("autoscaling", "v2", "horizontalpodautoscalers"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append([]v1alpha1.APIResource(nil), tt.in...)
			SortAPIResources(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SortAPIResources() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// failedGroups names the groups a partial discovery failure lists, and
// nothing for any other error.
func TestFailedGroups(t *testing.T) {
	partial := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503"),
		{Group: "metrics.k8s.io", Version: "v1"}:      errors.New("503"),
		{Group: "custom.example.com", Version: "v1"}:  errors.New("503"),
	}}
	got := failedGroups(fmt.Errorf("discover API resources: %w", partial))
	if len(got) != 2 || !got["metrics.k8s.io"] || !got["custom.example.com"] {
		t.Errorf("failedGroups = %v, want metrics.k8s.io and custom.example.com", got)
	}
	if got := failedGroups(errors.New("connection refused")); got != nil {
		t.Errorf("failedGroups of another error = %v, want none", got)
	}
	if got := failedGroups(nil); got != nil {
		t.Errorf("failedGroups(nil) = %v", got)
	}
}

// A kind the mapping does not know may still have objects when its group
// failed discovery or the last discovery listed it; not otherwise (a kind
// of a served group that the member never served).
func TestKindUnavailable(t *testing.T) {
	if (&Session{}).kindUnavailable(schema.GroupKind{Group: "example.com", Kind: "Gadget"}) != true {
		t.Errorf("before any discovery a kind the mapping does not know is taken as gone")
	}
	s := &Session{
		resources:    []v1alpha1.APIResource{{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets"}},
		failedGroups: map[string]bool{"metrics.k8s.io": true},
		discovered:   true,
	}
	for _, tt := range []struct {
		gk   schema.GroupKind
		want bool
	}{
		{schema.GroupKind{Group: "metrics.k8s.io", Kind: "PodMetrics"}, true},
		{schema.GroupKind{Group: "example.com", Kind: "Widget"}, true},
		{schema.GroupKind{Group: "example.com", Kind: "Gadget"}, false},
		{schema.GroupKind{Group: "other.example.com", Kind: "Widget"}, false},
	} {
		if got := s.kindUnavailable(tt.gk); got != tt.want {
			t.Errorf("kindUnavailable(%s) = %t, want %t", tt.gk, got, tt.want)
		}
	}
}
