package rbac

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/config/crd"
)

// clusterRoles returns the ClusterRoles of an embedded file by name.
func clusterRoles(t *testing.T, file string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	objs, err := Objects(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		r := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err != nil {
			t.Fatal(err)
		}
		out[r.Name] = r
	}
	return out
}

// The generated ClusterRole names its API groups (a "*" group would cover
// Secrets and every custom kind) and never grants Secrets; the optional
// file does, to the same ServiceAccount.
func TestShippedRoles(t *testing.T) {
	roles := clusterRoles(t, RoleFile)
	role, ok := roles[ServiceAccount]
	if !ok {
		t.Fatalf("%s has no ClusterRole %s", RoleFile, ServiceAccount)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "*") {
			t.Errorf("rule %+v grants every API group", r)
		}
		if slices.Contains(r.APIGroups, "") && (slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")) {
			t.Errorf("rule %+v grants Secrets cluster-wide", r)
		}
	}
	secrets, ok := clusterRoles(t, OptionalFile)[SecretsClusterRole]
	if !ok || !slices.Contains(secrets.Rules[0].Resources, "secrets") {
		t.Errorf("%s lacks ClusterRole %s granting Secrets", OptionalFile, SecretsClusterRole)
	}
	for _, file := range []string{BindingFile, OptionalFile, LegacyFinalizerFile} {
		objs, err := Objects(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if !slices.Contains([]string{"ClusterRoleBinding", "RoleBinding"}, o.GetKind()) {
				continue
			}
			b := &rbacv1.RoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
				t.Fatal(err)
			}
			want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: Namespace, Name: ServiceAccount}
			if len(b.Subjects) != 1 || b.Subjects[0] != want {
				t.Errorf("%s %s binds %+v, want only %+v", o.GetKind(), o.GetName(), b.Subjects, want)
			}
		}
	}
}

// TestTemplateKindsNotUpdated: the generated ClusterRole lets the
// controller-manager read the template kinds, never write them (removing
// the finalizer earlier versions set needs LegacyFinalizerFile); namespaces
// may also be created (flotilla-system). Status subresources and the
// autoscale controller's replicas are named on their own rules.
func TestTemplateKindsNotUpdated(t *testing.T) {
	role := clusterRoles(t, RoleFile)[ServiceAccount]
	if role == nil {
		t.Fatalf("%s has no ClusterRole %s", RoleFile, ServiceAccount)
	}
	core := []string{"configmaps", "limitranges", "namespaces", "persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates", "replicationcontrollers", "resourcequotas", "serviceaccounts", "services"}
	allowed := []string{"get", "list", "watch"}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			template := res == "*" || (slices.Contains(r.APIGroups, "") && slices.Contains(core, res))
			if !template {
				continue
			}
			for _, v := range r.Verbs {
				if !slices.Contains(allowed, v) && (res != "namespaces" || v != "create") {
					t.Errorf("rule %v %v grants %q on template kinds", r.APIGroups, r.Resources, v)
				}
			}
		}
	}
}

// The agents' ClusterRole names exactly the resources an agent works
// with: its intents (and their status) and Leases, no wildcard, and no
// create or delete of intents (only the control plane writes them).
func TestAgentRole(t *testing.T) {
	role, ok := clusterRoles(t, AgentFile)[AgentClusterRole]
	if !ok {
		t.Fatalf("%s has no ClusterRole %s", AgentFile, AgentClusterRole)
	}
	allowed := map[string]bool{"clusterintents": true, "clusterintents/status": true, "leases": true}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if !allowed[res] {
				t.Errorf("rule %+v grants %s", r, res)
			}
			if res == "clusterintents" && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "delete")) {
				t.Errorf("rule %+v lets an agent create or delete intents", r)
			}
		}
		if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Verbs, "*") {
			t.Errorf("rule %+v uses a wildcard", r)
		}
	}
}

// TestNoRBACWrites: neither the controller-manager's ClusterRole nor its
// Role may write the host's RBAC, impersonate, or escalate and bind roles
// (a write of a ClusterRole or binding would let it grant anything it
// holds to anyone). Pull agents' access is made by flotilla join, an
// admin's command.
func TestNoRBACWrites(t *testing.T) {
	objs, err := Objects(RoleFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			for _, v := range r.Verbs {
				if slices.Contains([]string{"escalate", "bind", "impersonate", "*"}, v) {
					t.Errorf("%s %s: rule %+v grants %s", o.GetKind(), o.GetName(), r, v)
				}
				if slices.Contains(r.APIGroups, "rbac.authorization.k8s.io") && !slices.Contains([]string{"get", "list", "watch"}, v) {
					t.Errorf("%s %s: rule %+v writes RBAC (%s)", o.GetKind(), o.GetName(), r, v)
				}
			}
		}
	}
}

// TestOwnCRDsUpdatedByName: the controller-manager may update only the
// CRDs it installs (config/crd), named one by one, so that a new CRD
// without its name here fails, and no rule lets it update or patch CRDs
// without names.
func TestOwnCRDsUpdatedByName(t *testing.T) {
	crds, err := crd.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range crds {
		want = append(want, c.Name)
	}
	slices.Sort(want)
	var named []string
	for _, r := range clusterRoles(t, RoleFile)[ServiceAccount].Rules {
		if !slices.Contains(r.Resources, "customresourcedefinitions") && !slices.Contains(r.Resources, "*") || !slices.Contains(r.APIGroups, "apiextensions.k8s.io") {
			continue
		}
		for _, v := range r.Verbs {
			switch {
			case (v == "update" || v == "patch") && len(r.ResourceNames) == 0:
				t.Errorf("rule %+v lets the controller-manager %s any CRD", r, v)
			case v == "update":
				named = append(named, r.ResourceNames...)
			}
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, want) {
		t.Errorf("CRDs it may update: %v, want those it installs: %v", named, want)
	}
}
