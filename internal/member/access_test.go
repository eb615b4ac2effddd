package member

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestAccess(t *testing.T) {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	restricted := []authorizationv1.ResourceRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"nodes", "pods"}},
		{Verbs: []string{"get", "list", "watch", "create"}, APIGroups: []string{""}, Resources: []string{"namespaces"}},
		{Verbs: []string{"update", "patch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{v1alpha1.SystemNamespace}},
		{Verbs: all, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		{Verbs: all, APIGroups: []string{"apps"}, Resources: []string{"deployments"}},
		// A grant on named objects only does not make the kind writable.
		{Verbs: all, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"one"}},
	}
	tests := []struct {
		name     string
		access   Access
		group    string
		resource string
		want     bool
	}{
		{name: "unknown access: every kind writable", access: Access{}, group: "", resource: "secrets", want: true},
		{name: "incomplete review: taken as unknown", access: AccessFromRules(restricted, true), group: "", resource: "secrets", want: true},
		{name: "wildcards", access: AccessFromRules([]authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, false),
			group: "apps.kruise.io", resource: "clonesets", want: true},
		{name: "listed core kind", access: AccessFromRules(restricted, false), group: "", resource: "configmaps", want: true},
		{name: "listed grouped kind", access: AccessFromRules(restricted, false), group: "apps", resource: "deployments", want: true},
		{name: "same resource name in another group", access: AccessFromRules(restricted, false), group: "extensions", resource: "deployments", want: false},
		{name: "read only", access: AccessFromRules(restricted, false), group: "", resource: "pods", want: false},
		{name: "create without delete", access: AccessFromRules(restricted, false), group: "", resource: "namespaces", want: false},
		{name: "named objects only", access: AccessFromRules(restricted, false), group: "", resource: "secrets", want: false},
		{name: "verbs split over rules", access: AccessFromRules([]authorizationv1.ResourceRule{
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"batch"}, Resources: []string{"*"}},
			{Verbs: []string{"create", "patch", "delete"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
		}, false), group: "batch", resource: "jobs", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.access.Writable(tt.group, tt.resource); got != tt.want {
				t.Errorf("Writable(%q, %q) = %v, want %v", tt.group, tt.resource, got, tt.want)
			}
		})
	}
}

func TestMarkReadOnlyAndSummary(t *testing.T) {
	rs := []v1alpha1.APIResource{
		{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"},
		{Version: "v1", Kind: "Secret", Resource: "secrets", ReadOnly: true}, // cleared by a later review
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"},
		{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs"},
		{Group: "batch", Version: "v1", Kind: "CronJob", Resource: "cronjobs"},
		{Group: "batch", Version: "v2", Kind: "Job", Resource: "jobs"},
	}
	access := AccessFromRules([]authorizationv1.ResourceRule{
		{Verbs: WriteVerbs, APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}},
	}, false)
	if n := access.MarkReadOnly(rs); n != 4 {
		t.Errorf("MarkReadOnly marked %d, want 4 (deployments, jobs twice, cronjobs)", n)
	}
	if got, want := ResourceSummary(rs, false, 10), "configmaps, secrets"; got != want {
		t.Errorf("writable summary = %q, want %q", got, want)
	}
	if got, want := ResourceSummary(rs, true, 2), "deployments.apps, jobs.batch and 1 more"; got != want {
		t.Errorf("read-only summary = %q, want %q (each resource once, whatever its versions)", got, want)
	}
	if n := (Access{}).MarkReadOnly(rs); n != 0 || ResourceSummary(rs, true, 10) != "" {
		t.Errorf("an unknown access left %d kinds read-only, want none", n)
	}
}
