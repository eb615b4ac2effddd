package templates

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestFederatedName(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name   string
		key    Key
		wantNS string
		want   string // "" → only check validity and the hash form
	}{
		{"deployment", Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, "shop", "web.deployment.apps"},
		{"core kind", Key{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}, "shop", "settings.configmap"},
		{"cluster-scoped", Key{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "viewer"}, "flotilla-system", "viewer.clusterrole.rbac.authorization.k8s.io"},
		{"colon in name", Key{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:viewer"}, "flotilla-system", ""},
		{"too long", Key{Group: "example.com", Kind: "Widget", Namespace: "a", Name: long}, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.FederatedName()
			if got.Namespace != tt.wantNS {
				t.Errorf("namespace = %q, want %q", got.Namespace, tt.wantNS)
			}
			if errs := validation.IsDNS1123Subdomain(got.Name); len(errs) > 0 {
				t.Errorf("name %q is not valid: %v", got.Name, errs)
			}
			if tt.want != "" && got.Name != tt.want {
				t.Errorf("name = %q, want %q", got.Name, tt.want)
			}
			if tt.want == "" && !strings.Contains(got.Name, "-") {
				t.Errorf("name %q has no hash suffix", got.Name)
			}
		})
	}
	// Different objects that sanitise alike still get different names.
	a := Key{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:viewer"}.FederatedName()
	b := Key{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system-viewer:"}.FederatedName()
	if a == b {
		t.Errorf("distinct objects share the name %v", a)
	}
}

func TestKeyOfStoreKey(t *testing.T) {
	gk := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	tests := []struct {
		in   string
		want Key
	}{
		{in: "ns/a", want: Key{Group: "example.com", Kind: "Widget", Namespace: "ns", Name: "a"}},
		{in: "cluster-wide", want: Key{Group: "example.com", Kind: "Widget", Name: "cluster-wide"}},
	}
	for _, tc := range tests {
		if got := keyOfStoreKey(gk, tc.in); got != tc.want {
			t.Errorf("keyOfStoreKey(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
