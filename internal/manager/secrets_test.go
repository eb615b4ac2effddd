package manager

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func TestNeedsSecrets(t *testing.T) {
	sel := func(apiVersion, kind string) []v1alpha1.ResourceSelector {
		return []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: apiVersion, Kind: kind}}
	}
	meta := metav1.ObjectMeta{Namespace: "shop", Name: "p"}
	tests := []struct {
		name string
		obj  client.Object
		want bool
	}{
		{"policy selecting Secrets", &v1alpha1.PropagationPolicy{ObjectMeta: meta, Spec: v1alpha1.PropagationSpec{ResourceSelectors: sel("v1", "Secret")}}, true},
		{"policy selecting ConfigMaps", &v1alpha1.PropagationPolicy{ObjectMeta: meta, Spec: v1alpha1.PropagationSpec{ResourceSelectors: sel("v1", "ConfigMap")}}, false},
		{"policy selecting a custom kind named Secret", &v1alpha1.PropagationPolicy{ObjectMeta: meta, Spec: v1alpha1.PropagationSpec{ResourceSelectors: sel("example.com/v1", "Secret")}}, false},
		{"cluster policy selecting Secrets", &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.PropagationSpec{ResourceSelectors: sel("v1", "Secret")}}, true},
		{"cluster policy selecting Deployments", &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.PropagationSpec{ResourceSelectors: sel("apps/v1", "Deployment")}}, false},
		{"FederatedObject of a Secret", &v1alpha1.FederatedObject{ObjectMeta: meta, Spec: v1alpha1.FederatedObjectSpec{Template: v1alpha1.TemplateReference{APIVersion: "v1", Kind: "Secret", Name: "s"}}}, true},
		{"workload referencing a Secret", &v1alpha1.FederatedObject{ObjectMeta: meta, Spec: v1alpha1.FederatedObjectSpec{
			Template:  v1alpha1.TemplateReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Followers: []v1alpha1.ObjectReference{{Kind: "ConfigMap", Name: "c"}, {Kind: "Secret", Name: "s"}},
		}}, true},
		{"workload referencing ConfigMaps only", &v1alpha1.FederatedObject{ObjectMeta: meta, Spec: v1alpha1.FederatedObjectSpec{
			Template:  v1alpha1.TemplateReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Followers: []v1alpha1.ObjectReference{{Kind: "ConfigMap", Name: "c"}},
		}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsSecrets(tt.obj); (got != "") != tt.want {
				t.Errorf("needsSecrets = %q, want needed=%v", got, tt.want)
			}
		})
	}
}

// The template cache, run as the controller-manager with the shipped role,
// watches the built-in kinds but not Secrets, and no custom kind it may
// not read. Secrets are watched once a policy selects them and the
// optional grant is applied, and no longer once no policy needs them; a
// custom kind once the controller-manager may read it. (Before, the cache
// watched every listable kind, Secrets included, from the start.)
func TestTemplateCacheWatchesSecretsOnlyOnDemand(t *testing.T) {
	testenv.Need(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElect = "0", "0", false
	opts.TemplateDiscoveryInterval = time.Second
	cfg := env.ControllerConfig(t)
	if err := PrepareHost(ctx, cfg, opts); err != nil {
		t.Fatal(err)
	}
	mgr, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := NewShared(ctx, mgr, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	tc := shared.Templates
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !tc.WaitForSync(syncCtx) {
		t.Fatal("template cache did not sync within a minute (watching a kind it may not list?)")
	}
	for _, gk := range []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Kind: "ConfigMap"}, {Kind: "Namespace"}} {
		if !tc.Watching(gk) {
			t.Errorf("not watching %s", gk)
		}
	}
	if tc.Watching(templates.SecretKind) {
		t.Fatal("watching Secrets although no policy selects them")
	}

	admin, err := client.New(env.Host.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	pp := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secrets"}, Spec: v1alpha1.PropagationSpec{
		ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret"}},
	}}
	base := tc.Discoveries()
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	// Needed but not granted: still not watched, a few discoveries later.
	waitDiscoveries(t, tc, base+3)
	if tc.Watching(templates.SecretKind) {
		t.Fatal("watching Secrets without the optional grant")
	}

	env.GrantControllerSecrets(t)
	testenv.Eventually(t, 30*time.Second, "Secrets watched once needed and granted", func(context.Context) error {
		if !tc.Watching(templates.SecretKind) {
			return fmt.Errorf("not watching Secrets")
		}
		return nil
	})
	if err := admin.Delete(ctx, pp); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "Secrets no longer watched once no policy needs them", func(context.Context) error {
		if tc.Watching(templates.SecretKind) {
			return fmt.Errorf("still watching Secrets")
		}
		return nil
	})

	// A custom kind: watched once the controller-manager may read it.
	widget := schema.GroupKind{Group: "privilege.example.com", Kind: "Widget"}
	createWidgetCRD(t, widget)
	testenv.Eventually(t, 30*time.Second, "the host serves "+widget.String(), func(ctx context.Context) error {
		_, err := env.Host.Dynamic.Resource(schema.GroupVersionResource{Group: widget.Group, Version: "v1", Resource: "widgets"}).List(ctx, metav1.ListOptions{})
		return err
	})
	waitDiscoveries(t, tc, tc.Discoveries()+3)
	if tc.Watching(widget) {
		t.Fatal("watching a custom kind the controller-manager may not read")
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-controller-manager-widgets"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{widget.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: rbac.Namespace, Name: rbac.ServiceAccount}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := admin.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", o.GetName(), err)
			}
		})
	}
	testenv.Eventually(t, 30*time.Second, "the custom kind watched once granted", func(context.Context) error {
		if !tc.Watching(widget) {
			return fmt.Errorf("not watching %s", widget)
		}
		return nil
	})
}

// waitDiscoveries waits until the cache has run discovery n times in all.
func waitDiscoveries(t *testing.T, tc *templates.Cache, n uint64) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "template discoveries", func(context.Context) error {
		if got := tc.Discoveries(); got < n {
			return fmt.Errorf("%d discoveries, want %d", got, n)
		}
		return nil
	})
}

// createWidgetCRD installs a namespaced CRD of kind gk (plural "widgets")
// and removes it when the test ends.
func createWidgetCRD(t *testing.T, gk schema.GroupKind) {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(env.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + gk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gk.Kind, Plural: "widgets", Singular: "widget", ListKind: gk.Kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
	if _, err := api.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})
}
