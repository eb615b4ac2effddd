package pull

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestIntentName(t *testing.T) {
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	roles := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	tests := []struct {
		name           string
		gr             schema.GroupResource
		namespace, obj string
		prefix         string
	}{
		{name: "namespaced", gr: deploy, namespace: "shop", obj: "web", prefix: "web.shop.deployments-"},
		{name: "cluster-scoped", gr: schema.GroupResource{Resource: "namespaces"}, obj: "shop", prefix: "shop.namespaces-"},
		{name: "colons and capitals", gr: roles, obj: "system:Aggregate-To-Edit", prefix: "system-aggregate-to-edit.clusterroles-"},
		{name: "long", gr: deploy, namespace: "shop", obj: strings.Repeat("a", 253), prefix: strings.Repeat("a", maxReadable) + "-"},
		{name: "nothing readable", gr: schema.GroupResource{Resource: "x"}, obj: "..", prefix: "x-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IntentName(tt.gr, tt.namespace, tt.obj)
			if !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("IntentName = %q, want prefix %q", got, tt.prefix)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("IntentName = %q is not a valid name: %v", got, errs)
			}
		})
	}
	// Objects that read alike stay apart.
	a := IntentName(deploy, "shop", "web")
	for _, other := range []string{
		IntentName(deploy, "", "web.shop"),
		IntentName(schema.GroupResource{Group: "extensions", Resource: "deployments"}, "shop", "web"),
		IntentName(deploy, "shop", "WEB"),
	} {
		if other == a {
			t.Errorf("distinct objects share the intent name %q", a)
		}
	}
}

func FuzzIntentName(f *testing.F) {
	f.Add("apps", "deployments", "shop", "web")
	f.Add("", "namespaces", "", "system:x..-y")
	f.Fuzz(func(t *testing.T, group, resource, namespace, name string) {
		got := IntentName(schema.GroupResource{Group: group, Resource: resource}, namespace, name)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("IntentName(%q, %q, %q, %q) = %q: %v", group, resource, namespace, name, got, errs)
		}
	})
}
