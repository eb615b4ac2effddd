package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// Objects only: an apiserver-only member is enough and starts fastest.
	os.Exit(testenv.Main(m, testenv.Options{Members: 1, APIServerOnly: true}, &env))
}

// writeCounter counts the non-read requests a client sends.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
	rt     http.RoundTripper
}

func (c *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		c.mu.Lock()
		c.writes = append(c.writes, req.Method+" "+req.URL.Path)
		c.mu.Unlock()
	}
	return c.rt.RoundTrip(req)
}

func (c *writeCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// applier returns an Applier for member-1 and the counter of its writes.
func applier(t *testing.T) (*dispatch.Applier, *writeCounter) {
	t.Helper()
	counter := &writeCounter{}
	return wrappedApplier(t, func(rt http.RoundTripper) http.RoundTripper { counter.rt = rt; return counter }), counter
}

// wrappedApplier returns an Applier for member-1 whose requests go through
// the transport wrap returns.
func wrappedApplier(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) *dispatch.Applier {
	t.Helper()
	testenv.Need(t, env)
	m := env.Members[0]
	cfg := rest.CopyConfig(m.Config)
	cfg.Wrap(wrap)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &dispatch.Applier{Client: dyn, Mapper: mapper}
}

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func deployment(ns, name, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": image,
					"resources": map[string]any{"requests": map[string]any{"cpu": "0.5", "memory": "64Mi"}},
				}}},
			},
		},
	}}
}

func mustApply(t *testing.T, a *dispatch.Applier, obj *unstructured.Unstructured, opts dispatch.Options, want dispatch.Outcome) {
	t.Helper()
	got, err := a.Apply(context.Background(), obj, opts)
	if err != nil || got != want {
		t.Fatalf("Apply %s: outcome %q, err %v; want %q", obj.GetName(), got, err, want)
	}
}

func TestApplyWritesOnlyWhatChanged(t *testing.T) {
	a, writes := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)

	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Created)
	if w := writes.take(); len(w) != 1 {
		t.Fatalf("create sent %d writes, want 1: %v", len(w), w)
	}
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.GetLabels()[v1alpha1.LabelManaged] != "true" {
		t.Errorf("member copy lacks %s=true: %v", v1alpha1.LabelManaged, live.GetLabels())
	}

	// Unchanged (cpu "0.5" is stored as "500m", defaults are added): no
	// write, also when the desired object carries host-side metadata and
	// status as a template read from the host does.
	for range 3 {
		mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Unchanged)
	}
	fromHost := deployment(ns, "web", "nginx:1.27")
	fromHost.SetUID("host-uid")
	fromHost.SetResourceVersion("12345")
	fromHost.SetGeneration(7)
	fromHost.SetFinalizers([]string{"flotilla.io/cleanup"})
	_ = unstructured.SetNestedField(fromHost.Object, int64(6), "status", "readyReplicas")
	mustApply(t, a, fromHost, dispatch.Options{}, dispatch.Unchanged)
	if w := writes.take(); len(w) != 0 {
		t.Fatalf("unchanged object sent writes: %v", w)
	}

	// A member-side label the federation does not set stays; a member-side
	// image edit (drift on a federation-owned field) is reverted.
	live.SetLabels(map[string]string{v1alpha1.LabelManaged: "true", "team": "member-side"})
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "nginx:hacked"
	_ = unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers")
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "member-operator"}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Updated)
	live, _ = res.Get(ctx, "web", metav1.GetOptions{})
	containers, _, _ = unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "nginx:1.27" {
		t.Errorf("image %v after apply, want the federation's nginx:1.27", img)
	}
	if live.GetLabels()["team"] != "member-side" {
		t.Errorf("member-side label lost: %v", live.GetLabels())
	}
	writes.take()
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Unchanged)

	// A sidecar injected by a member-side actor is kept and causes no write.
	live, _ = res.Get(ctx, "web", metav1.GetOptions{})
	containers, _, _ = unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers = append(containers, map[string]any{"name": "proxy", "image": "envoy:1"})
	_ = unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers")
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "injector"}); err != nil {
		t.Fatal(err)
	}
	writes.take()
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Unchanged)
	if w := writes.take(); len(w) != 0 {
		t.Fatalf("injected sidecar caused writes: %v", w)
	}

	// A template change is written.
	mustApply(t, a, deployment(ns, "web", "nginx:1.28"), dispatch.Options{}, dispatch.Updated)
	live, _ = res.Get(ctx, "web", metav1.GetOptions{})
	containers, _, _ = unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if len(containers) != 2 || containers[0].(map[string]any)["image"] != "nginx:1.28" {
		t.Errorf("containers after update: %v", containers)
	}
}

func TestUnmanagedObjectsConflictUnlessAdopted(t *testing.T) {
	a, _ := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	existing, err := res.Create(ctx, deployment(ns, "legacy", "nginx:1.27"), metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}

	got, err := a.Apply(ctx, deployment(ns, "legacy", "nginx:1.28"), dispatch.Options{})
	if got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Fatalf("Apply over an unmanaged object: %q, %v; want Conflict", got, err)
	}
	if got, err := a.Delete(ctx, deploymentGVR.GroupVersion().WithKind("Deployment"), ns, "legacy"); got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Fatalf("Delete of an unmanaged object: %q, %v; want Conflict", got, err)
	}
	after, _ := res.Get(ctx, "legacy", metav1.GetOptions{})
	if after.GetResourceVersion() != existing.GetResourceVersion() {
		t.Fatalf("unmanaged object was written (resourceVersion %s -> %s)", existing.GetResourceVersion(), after.GetResourceVersion())
	}

	// The managed label alone (a manifest copied from another member) does
	// not make an object Flotilla's: neither overwritten nor deleted.
	copied := deployment(ns, "copied", "nginx:1.27")
	copied.SetLabels(map[string]string{v1alpha1.LabelManaged: "true"})
	copied, err = res.Create(ctx, copied, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Apply(ctx, deployment(ns, "copied", "nginx:1.28"), dispatch.Options{}); got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Fatalf("Apply over an object carrying only the managed label: %q, %v; want Conflict", got, err)
	}
	if got, err := a.Delete(ctx, deploymentGVR.GroupVersion().WithKind("Deployment"), ns, "copied"); got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Fatalf("Delete of an object carrying only the managed label: %q, %v; want Conflict", got, err)
	}
	if after, err := res.Get(ctx, "copied", metav1.GetOptions{}); err != nil || after.GetResourceVersion() != copied.GetResourceVersion() {
		t.Fatalf("the labelled object was written or deleted: %v", err)
	}

	// Adoption takes it over in place: same UID, same generation when the
	// template is the same, managed from then on.
	mustApply(t, a, deployment(ns, "legacy", "nginx:1.27"), dispatch.Options{Adopt: true}, dispatch.Adopted)
	after, _ = res.Get(ctx, "legacy", metav1.GetOptions{})
	if after.GetUID() != existing.GetUID() || after.GetGeneration() != existing.GetGeneration() {
		t.Errorf("adoption replaced or changed the object: uid %s->%s generation %d->%d", existing.GetUID(), after.GetUID(), existing.GetGeneration(), after.GetGeneration())
	}
	mustApply(t, a, deployment(ns, "legacy", "nginx:1.27"), dispatch.Options{}, dispatch.Unchanged)

	if got, err := a.Delete(ctx, deploymentGVR.GroupVersion().WithKind("Deployment"), ns, "legacy"); got != dispatch.Deleted || err != nil {
		t.Fatalf("Delete of the adopted object: %q, %v", got, err)
	}
	if got, err := a.Delete(ctx, deploymentGVR.GroupVersion().WithKind("Deployment"), ns, "legacy"); got != dispatch.Absent || err != nil {
		t.Fatalf("second Delete: %q, %v; want Absent", got, err)
	}
}

// installCRD installs a CRD of kind (plural) in group example.com, version
// v1, with scope Namespaced or Cluster, in the first member until the test
// ends.
func installCRD(t *testing.T, kind, plural, scope string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": scope,
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	crdRes := env.Members[0].Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crdRes.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crdRes.Delete(context.Background(), plural+".example.com", metav1.DeleteOptions{}) })
}

func TestKindInstalledLaterIsApplied(t *testing.T) {
	a, _ := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}}
	// The mapper has looked at the member before the CRD exists.
	if _, err := a.Apply(ctx, widget, dispatch.Options{}); err == nil {
		t.Fatal("Apply of an unknown kind succeeded")
	}
	installCRD(t, "Gadget", "gadgets", "Namespaced")
	testenv.Eventually(t, 30*time.Second, "Gadget applied once the CRD is served", func(ctx context.Context) error {
		got, err := a.Apply(ctx, widget, dispatch.Options{})
		if err != nil {
			return err
		}
		if got != dispatch.Created {
			return fmt.Errorf("outcome %q", got)
		}
		return nil
	})
	mustApply(t, a, widget, dispatch.Options{}, dispatch.Unchanged)
}

// TestScopeMismatchIsRefused: a kind namespaced on the host but
// cluster-scoped in the member (a CRD defined differently) is neither
// written nor deleted there: the member would act on a cluster-scoped
// object, out of the namespace's reach.
func TestScopeMismatchIsRefused(t *testing.T) {
	a, writes := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	installCRD(t, "Gizmo", "gizmos", "Cluster")
	gizmo := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "shared", "namespace": ns}}}
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}
	// A cluster-scoped Gizmo of the same name that the member's admin made.
	testenv.Eventually(t, 30*time.Second, "the member serves Gizmos", func(ctx context.Context) error {
		_, err := env.Members[0].Dynamic.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "shared"}}}, metav1.CreateOptions{})
		return err
	})
	t.Cleanup(func() {
		_ = env.Members[0].Dynamic.Resource(gvr).Delete(context.Background(), "shared", metav1.DeleteOptions{})
	})
	testenv.Eventually(t, 30*time.Second, "the applier knows Gizmos", func(ctx context.Context) error {
		_, err := a.Apply(ctx, gizmo(), dispatch.Options{Adopt: true})
		if err == nil || !strings.Contains(err.Error(), "cluster-scoped in the member but namespaced on the host") {
			return fmt.Errorf("Apply: %v, want the scope refused", err)
		}
		return nil
	})
	if _, err := a.Delete(ctx, gizmo().GroupVersionKind(), ns, "shared"); err == nil || !strings.Contains(err.Error(), "cluster-scoped in the member") {
		t.Errorf("Delete: %v, want the scope refused", err)
	}
	if w := writes.take(); len(w) != 0 {
		t.Errorf("writes to the member: %v, want none", w)
	}
	if _, err := env.Members[0].Dynamic.Resource(gvr).Get(ctx, "shared", metav1.GetOptions{}); err != nil {
		t.Errorf("the member's own cluster-scoped Gizmo: %v, want it untouched", err)
	}
}

// An object whose namespace the member lacks is written after Apply
// creates the namespace (labelled managed); the writes are the failed
// apply, the namespace and the retried apply, nothing else.
func TestApplyCreatesAMissingNamespace(t *testing.T) {
	a, writes := applier(t)
	ctx := context.Background()
	ns := "dispatch-missing-ns"
	m := env.Members[0].Client
	t.Cleanup(func() {
		if err := m.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	mustApply(t, a, deployment(ns, "web", "nginx:1"), dispatch.Options{}, dispatch.Created)
	got, err := m.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace not created: %v", err)
	}
	if got.Labels[v1alpha1.LabelManaged] != "true" {
		t.Errorf("namespace labels %v, want %s=true", got.Labels, v1alpha1.LabelManaged)
	}
	if _, err := m.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("deployment not written: %v", err)
	}
	if w := writes.take(); len(w) != 3 {
		t.Errorf("writes %v, want the failed apply, the namespace and the apply", w)
	}
	// A second object in the namespace costs one write.
	mustApply(t, a, deployment(ns, "api", "nginx:1"), dispatch.Options{}, dispatch.Created)
	if w := writes.take(); len(w) != 1 {
		t.Errorf("writes %v, want one apply", w)
	}

	// The namespace is not a copy of a host Namespace (nothing that
	// deletes copies deletes it), until a propagated Namespace takes it
	// over, without a conflict.
	live, err := env.Members[0].Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dispatch.Written(live) || !dispatch.OnDemandNamespace(live) {
		t.Errorf("namespace created on demand: Written %v, OnDemandNamespace %v, want false, true (managed fields %+v)",
			dispatch.Written(live), dispatch.OnDemandNamespace(live), live.GetManagedFields())
	}
	if out, err := a.Delete(ctx, namespaceObj(ns, nil).GroupVersionKind(), "", ns); out != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Errorf("Delete of the namespace created on demand: %s, %v; want %s (not Flotilla's copy)", out, err, dispatch.Conflict)
	}
	mustApply(t, a, namespaceObj(ns, map[string]string{"team": "a"}), dispatch.Options{}, dispatch.Adopted)
	got, err = m.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels["team"] != "a" || got.DeletionTimestamp != nil {
		t.Fatalf("namespace after the host Namespace's copy was applied: %v, %v", got, err)
	}
	writes.take()

	// A namespace someone else created is left as it is: the copy goes in,
	// the namespace is neither labelled nor written, and a Namespace copy
	// is a conflict there.
	own := "dispatch-own-ns"
	if _, err := m.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: own}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.CoreV1().Namespaces().Delete(context.Background(), own, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", own, err)
		}
	})
	mustApply(t, a, deployment(own, "web", "nginx:1"), dispatch.Options{}, dispatch.Created)
	if w := writes.take(); len(w) != 1 {
		t.Errorf("writes %v, want the apply of the Deployment only", w)
	}
	if out, err := a.Apply(ctx, namespaceObj(own, nil), dispatch.Options{}); out != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Errorf("Apply of a Namespace over the member's own: %s, %v; want %s", out, err, dispatch.Conflict)
	}
	if got, err := m.CoreV1().Namespaces().Get(ctx, own, metav1.GetOptions{}); err != nil || len(got.Labels) != 1 {
		t.Errorf("the member's own namespace: labels %v (%v), want only kubernetes.io/metadata.name", got.Labels, err)
	}
}

// namespaceObj is a host Namespace with labels.
func namespaceObj(name string, labels map[string]string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	ns.SetLabels(labels)
	return ns
}

// TestHeldCopyCreatedUnpaused: a copy rendered held by a federated rollout
// (paused, flotilla.io/held) that the member does not have is created
// unpaused, so that it starts its pods; an existing copy is paused as
// rendered.
func TestHeldCopyCreatedUnpaused(t *testing.T) {
	a, _ := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	held := func(name string) *unstructured.Unstructured {
		d := deployment(ns, name, "example.com/app:2")
		d.SetAnnotations(map[string]string{v1alpha1.AnnotationHeld: "true"})
		_ = unstructured.SetNestedField(d.Object, true, "spec", "paused")
		return d
	}
	mustApply(t, a, held("fresh"), dispatch.Options{}, dispatch.Created)
	mustApply(t, a, deployment(ns, "existing", "example.com/app:1"), dispatch.Options{}, dispatch.Created)
	mustApply(t, a, held("existing"), dispatch.Options{}, dispatch.Updated)
	for name, want := range map[string]bool{"fresh": false, "existing": true} {
		d, err := env.Members[0].Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Paused != want {
			t.Errorf("%s: paused %v, want %v", name, d.Spec.Paused, want)
		}
	}
}

// TestDeleteOfAKindInAnUnavailableGroup: a kind the member does not serve
// has no copy to delete (Absent), unless the member's discovery of its
// group failed (an aggregated apiserver down): then the copy may be there
// and Delete says it cannot tell.
func TestDeleteOfAKindInAnUnavailableGroup(t *testing.T) {
	a, _ := applier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "metrics.example.com", Version: "v1", Kind: "Sample"}
	if got, err := a.Delete(ctx, gvk, ns, "s1"); got != dispatch.Absent || err != nil {
		t.Errorf("Delete of a kind the member does not serve: %q, %v; want Absent", got, err)
	}
	a.Unavailable = func(gk schema.GroupKind) bool { return gk == gvk.GroupKind() }
	if got, err := a.Delete(ctx, gvk, ns, "s1"); got != "" || !errors.Is(err, dispatch.ErrGroupUnavailable) {
		t.Errorf("Delete of a kind whose group's discovery failed: %q, %v; want ErrGroupUnavailable", got, err)
	}
	if got, err := a.Delete(ctx, schema.GroupVersionKind{Group: "other.example.com", Version: "v1", Kind: "Sample"}, ns, "s1"); got != dispatch.Absent || err != nil {
		t.Errorf("Delete of a kind of another group: %q, %v; want Absent", got, err)
	}
}
