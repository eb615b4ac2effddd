package apienablement

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

var (
	deployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMap  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cloneSet   = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
)

func res(group, version, kind, resource string) v1alpha1.APIResource {
	return v1alpha1.APIResource{Group: group, Version: version, Kind: kind, Resource: resource, Scope: v1alpha1.ScopeNamespaced}
}

// sorted is a discovery list in the order the status writer keeps.
var sorted = []v1alpha1.APIResource{
	res("", "v1", "ConfigMap", "configmaps"),
	res("", "v1", "Pod", "pods"),
	res("", "v1", "Secret", "secrets"),
	res("apps", "v1", "DaemonSet", "daemonsets"),
	res("apps", "v1", "Deployment", "deployments"),
	res("apps", "v1", "StatefulSet", "statefulsets"),
	res("apps.kruise.io", "v1alpha1", "CloneSet", "clonesets"),
	res("apps.kruise.io", "v1beta1", "StatefulSet", "statefulsets"),
	res("batch", "v1", "Job", "jobs"),
}

func TestFilter(t *testing.T) {
	unsorted := []v1alpha1.APIResource{sorted[8], sorted[6], sorted[0], sorted[4]}
	// restricted is sorted as a restricted join leaves it: only
	// ConfigMaps and Deployments writable.
	restricted := append([]v1alpha1.APIResource(nil), sorted...)
	for i := range restricted {
		restricted[i].ReadOnly = restricted[i].Kind != "ConfigMap" && restricted[i].Kind != "Deployment"
	}
	unsortedRestricted := []v1alpha1.APIResource{restricted[8], restricted[6], restricted[4]}
	tests := []struct {
		name      string
		gvk       schema.GroupVersionKind
		resources []v1alpha1.APIResource
		want      string // "" when the cluster passes
	}{
		{name: "served", gvk: deployment, resources: sorted},
		{name: "core group served", gvk: configMap, resources: sorted},
		{name: "CRD served", gvk: cloneSet, resources: sorted},
		{name: "not discovered yet", gvk: cloneSet},
		{name: "CRD missing", gvk: cloneSet, resources: sorted[:6], want: "do not serve apps.kruise.io/v1alpha1 CloneSet"},
		{name: "core kind missing", gvk: configMap, resources: sorted[1:], want: "do not serve v1 ConfigMap"},
		{name: "other version only", gvk: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "CloneSet"},
			resources: sorted, want: "do not serve apps.kruise.io/v1beta1 CloneSet"},
		{name: "same kind in another group", gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Job"},
			resources: sorted, want: "do not serve apps/v1 Job"},
		{name: "unsorted list, served", gvk: deployment, resources: unsorted},
		{name: "unsorted list, missing", gvk: configMap, resources: []v1alpha1.APIResource{sorted[8], sorted[6], sorted[4]}, want: "do not serve v1 ConfigMap"},
		{name: "restricted, writable", gvk: deployment, resources: restricted},
		{name: "restricted, core kind writable", gvk: configMap, resources: restricted},
		{name: "restricted, read-only", gvk: cloneSet, resources: restricted, want: "do not let the control plane write apps.kruise.io/v1alpha1 CloneSet (member RBAC)"},
		{name: "restricted, read-only in the core group", gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, resources: restricted,
			want: "do not let the control plane write v1 Secret (member RBAC)"},
		{name: "restricted, other version not served", gvk: schema.GroupVersionKind{Group: "apps", Version: "v2", Kind: "Deployment"}, resources: restricted,
			want: "do not serve apps/v2 Deployment"},
		{name: "restricted unsorted, writable", gvk: deployment, resources: unsortedRestricted},
		{name: "restricted unsorted, read-only", gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, resources: unsortedRestricted,
			want: "do not let the control plane write batch/v1 Job (member RBAC)"},
	}
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(*APIEnablement)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &framework.Unit{GVK: tt.gvk, Placement: &v1alpha1.Placement{}}
			c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{APIResources: tt.resources}}
			c.Name = "member-1"
			for _, prepared := range []bool{true, false} {
				state := framework.CycleState{}
				if prepared {
					if s := f.Prepare(context.Background(), state, u, []*v1alpha1.MemberCluster{c}); !s.IsSuccess() {
						t.Fatalf("Prepare: %v", s.Reason)
					}
				}
				s := f.Filter(context.Background(), state, u, c)
				switch {
				case tt.want == "" && !s.IsSuccess():
					t.Errorf("prepared=%v: excluded with %q, want pass", prepared, s.Reason)
				case tt.want != "" && s.IsSuccess():
					t.Errorf("prepared=%v: passed, want %q", prepared, tt.want)
				case tt.want != "" && (s.Code != framework.Unschedulable || s.Reason != tt.want):
					t.Errorf("prepared=%v: got %d %q, want Unschedulable %q", prepared, s.Code, s.Reason, tt.want)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, args := range []string{"", "null", "{}", " { } "} {
		if _, err := New([]byte(args)); err != nil {
			t.Errorf("New(%q): %v", args, err)
		}
	}
	for _, args := range []string{`{"x":1}`, `[]`, `{`} {
		if _, err := New([]byte(args)); err == nil {
			t.Errorf("New(%q) accepted", args)
		}
	}
}

// BenchmarkFilter filters 100 clusters serving 96 resources each, the
// unit's kind among them.
func BenchmarkFilter(b *testing.B) {
	rs := make([]v1alpha1.APIResource, 0, 100)
	for _, g := range []string{"", "apps", "batch", "example.com", "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io"} {
		for i := range 12 {
			rs = append(rs, res(g, "v1", "Kind"+string(rune('A'+i)), "kinds"+string(rune('a'+i))))
		}
	}
	c := &v1alpha1.MemberCluster{Status: v1alpha1.MemberClusterStatus{APIResources: rs}}
	u := &framework.Unit{GVK: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "KindK"}}
	p := &APIEnablement{}
	state := framework.CycleState{}
	p.Prepare(context.Background(), state, u, nil)
	b.ReportAllocs()
	for b.Loop() {
		for range 100 {
			if !p.Filter(context.Background(), state, u, c).IsSuccess() {
				b.Fatal("excluded")
			}
		}
	}
}
