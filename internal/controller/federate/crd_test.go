package federate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// The tests of this file each make a custom kind of their own, Gizmo in
// a group of their own, so that one CRD's deletion never meets the next
// test's.

// keptGizmo is the Gizmo whose final state asks to keep its copy.
const keptGizmo = "gizmo-0"

// TestDeletingACRDReleasesItsObjects: deleting a CRD on the host deletes
// its objects there, and the template cache stops watching the kind. Each
// object's member copy is deleted (or kept: for the one whose final state
// asked for it, and for the one protected from deletion, which the CRD's
// cleanup deletes past the protecting admission policy) and no
// FederatedObject stays behind.
func TestDeletingACRDReleasesItsObjects(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "crd-deletion.flotilla.io", Version: "v1", Resource: "gizmos"}
	ns, crd, names := propagatedGizmos(t, gvr, 8)
	// Protected: one the CRD's cleanup deletes at once, and one a
	// finalizer (an operator's) holds being deleted.
	const protected, held, finalizer = "gizmo-1", "gizmo-2", "example.com/hold"
	gizmos := env.Host.Dynamic.Resource(gvr).Namespace(ns)
	for name, patch := range map[string]string{
		protected: fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.AnnotationDeletionProtection),
		held:      fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"},"finalizers":[%q]}}`, v1alpha1.AnnotationDeletionProtection, finalizer),
	} {
		if _, err := gizmos.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, waitTimeout, "the protection recorded on the FederatedObject of "+name, func(ctx context.Context) error {
			fo := &v1alpha1.FederatedObject{}
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".gizmo." + gvr.Group}, fo); err != nil {
				return err
			}
			if fo.Annotations[v1alpha1.AnnotationTemplateProtected] != "true" {
				return fmt.Errorf("annotations %v", fo.Annotations)
			}
			return nil
		})
	}
	if err := admin.Delete(ctx, crd); err != nil {
		t.Fatalf("delete the host's CRD: %v", err)
	}
	waitGizmosReleased(t, gvr, ns, names, keptGizmo, protected, held)
	// Let the CRD go.
	if _, err := gizmos.Patch(ctx, held, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// TestCRDDeletedWhileTheControllerManagerIsDown: the CRD is deleted, with
// its objects, while the controller-manager is down. Started again, it
// never sees the kind nor its CRD's deletion, and the host's garbage
// collector does not collect FederatedObjects whose owner's kind is gone.
// Without evidence that the objects went (an aggregated API unregistered
// looks the same), the copies stay: a FederatedObject deleted by hand
// says so (CleanupWaiting, with what to do), one that recorded orphan
// goes and keeps its copy, and the rest stay. Annotated
// flotilla.io/release=delete and deleted, as the event says, they go and
// take their copies.
func TestCRDDeletedWhileTheControllerManagerIsDown(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "crd-deletion-down.flotilla.io", Version: "v1", Resource: "gizmos"}
	ns, crd, names := propagatedGizmos(t, gvr, 8)
	foKey := func(name string) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: name + ".gizmo." + gvr.Group}
	}
	const byHand = "gizmo-1"
	plane.Restart(t, func() {
		for _, name := range []string{keptGizmo, byHand} {
			fo := &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: foKey(name).Name}}
			if err := admin.Delete(ctx, fo); err != nil {
				t.Fatalf("delete FederatedObject %s: %v", fo.Name, err)
			}
		}
		if err := admin.Delete(ctx, crd); err != nil {
			t.Fatalf("delete the host's CRD: %v", err)
		}
		testenv.Eventually(t, waitTimeout, "CRD "+crd.Name+" gone from the host", func(ctx context.Context) error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
	})
	waitGone(t, foKey(keptGizmo)) // its record decides: orphan
	testenv.Eventually(t, waitTimeout, "CleanupWaiting on "+foKey(byHand).String(), func(ctx context.Context) error {
		e := findEvent(ctx, t, ns, "FederatedObject", foKey(byHand).Name, propagate.ReasonCleanupWaiting)
		if e == nil {
			return errNotYet
		}
		if !strings.Contains(e.Note, "flotilla.io/release=delete") {
			return fmt.Errorf("event %q does not say what to do", e.Note)
		}
		return nil
	})
	testenv.Consistently(t, 6*time.Second, func() error { // three discoveries
		return gizmoCopies(ctx, gvr, ns, names)
	})
	for _, name := range names[1:] {
		key := foKey(name)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fo := &v1alpha1.FederatedObject{}
			if err := admin.Get(ctx, key, fo); err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&fo.ObjectMeta, v1alpha1.AnnotationRelease, v1alpha1.ReleaseDelete)
			return admin.Update(ctx, fo)
		})
		if err != nil {
			t.Fatalf("annotate %s: %v", key, err)
		}
		if err := admin.Delete(ctx, &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	waitGizmosReleased(t, gvr, ns, names, keptGizmo)
}

// gizmoCopies checks that the member holds a copy of every Gizmo of names.
func gizmoCopies(ctx context.Context, gvr schema.GroupVersionResource, ns string, names []string) error {
	for _, name := range names {
		if _, err := env.Cluster(memberName).Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("member copy of %s: %w", name, err)
		}
	}
	return nil
}

// TestUnservedCRDKeepsItsCopies: a CRD that stops serving its only
// version (served: false) takes the kind out of the host's discovery, but
// its objects stay in the host's storage. Their copies stay too. (The
// host's garbage collector, finding the owners' path gone, may delete the
// FederatedObjects: the one that recorded orphan goes, the others wait,
// keeping their copies.) Served again, the objects are propagated as
// before.
func TestUnservedCRDKeepsItsCopies(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "crd-unserved.flotilla.io", Version: "v1", Resource: "gizmos"}
	ns, crd, names := propagatedGizmos(t, gvr, 4)
	setServed := func(served bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return err
			}
			got.Spec.Versions[0].Served = served
			return admin.Update(ctx, got)
		})
		if err != nil {
			t.Fatalf("set served=%v on %s: %v", served, crd.Name, err)
		}
	}
	setServed(false)
	disco := env.Host.Client.Discovery()
	testenv.Eventually(t, waitTimeout, gvr.GroupVersion().String()+" gone from the host's discovery", func(context.Context) error {
		if _, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String()); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still listed (%v)", err)
		}
		return nil
	})
	// Longer than the template cache takes to drop the kind (a CRD change
	// triggers a discovery, and one runs every 2 s here) and ask what
	// became of its objects.
	testenv.Consistently(t, 10*time.Second, func() error {
		return gizmoCopies(ctx, gvr, ns, names)
	})
	setServed(true)
	testenv.Eventually(t, waitTimeout, "every Gizmo propagated again", func(ctx context.Context) error {
		return gizmosPropagated(ctx, gvr, ns, names)
	})
}

// gizmosPropagated checks that every Gizmo of names has a FederatedObject
// not being deleted that reports its copy in the member PropagationOK, and
// a copy there.
func gizmosPropagated(ctx context.Context, gvr schema.GroupVersionResource, ns string, names []string) error {
	for _, name := range names {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".gizmo." + gvr.Group}, fo); err != nil {
			return fmt.Errorf("FederatedObject of %s: %w", name, err)
		}
		if !fo.DeletionTimestamp.IsZero() {
			return fmt.Errorf("FederatedObject of %s is being deleted", name)
		}
		if !slices.ContainsFunc(fo.Status.Clusters, func(c v1alpha1.ClusterPropagationStatus) bool {
			return c.Cluster == memberName && c.Reason == v1alpha1.PropagationOK
		}) {
			return fmt.Errorf("FederatedObject of %s: status.clusters %+v", name, fo.Status.Clusters)
		}
	}
	return gizmoCopies(ctx, gvr, ns, names)
}

// propagatedGizmos installs the Gizmo CRD of gvr on the host and the
// member, lets the controller-manager read Gizmos, and propagates n of
// them to the member from a new namespace, keptGizmo annotated to keep
// its copy. It returns the namespace, the host's CRD and the names.
func propagatedGizmos(t *testing.T, gvr schema.GroupVersionResource, n int) (string, *apiextensionsv1.CustomResourceDefinition, []string) {
	t.Helper()
	ns := env.Namespace(t)
	ctx := context.Background()
	crd := gizmoCRD(gvr)
	grantGizmos(t, gvr) // first: the cache looks at a new kind when its CRD comes
	for _, c := range []*testenv.Cluster{env.Host, env.Cluster(memberName)} {
		installGizmos(t, c, crd)
	}
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gizmos"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: gvr.GroupVersion().String(), Kind: "Gizmo", Namespace: ns}},
			Placement:         v1alpha1.Placement{ClusterNames: []string{memberName}},
		},
	}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		g := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(i)}}}
		g.SetAPIVersion(gvr.GroupVersion().String())
		g.SetKind("Gizmo")
		g.SetName(fmt.Sprintf("gizmo-%d", i))
		if g.GetName() == keptGizmo {
			g.SetAnnotations(map[string]string{v1alpha1.AnnotationOrphan: "true"})
		}
		if _, err := env.Host.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, g.GetName())
	}
	for _, name := range names {
		waitForCluster(t, types.NamespacedName{Namespace: ns, Name: name + ".gizmo." + gvr.Group}, v1alpha1.PropagationOK)
	}
	waitRelease(t, types.NamespacedName{Namespace: ns, Name: keptGizmo + ".gizmo." + gvr.Group}, v1alpha1.ReleaseOrphan)
	return ns, crd, names
}

// waitGizmosReleased waits until no Gizmo of the names has a
// FederatedObject left, then checks that the member holds only the copies
// of kept (sorted).
func waitGizmosReleased(t *testing.T, gvr schema.GroupVersionResource, ns string, names []string, kept ...string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "every Gizmo's FederatedObject gone", func(ctx context.Context) error {
		var left []string
		for _, name := range names {
			fo := &v1alpha1.FederatedObject{}
			err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".gizmo." + gvr.Group}, fo)
			switch {
			case err == nil:
				left = append(left, fmt.Sprintf("%s (deleting: %v, release %q)", name, !fo.DeletionTimestamp.IsZero(), fo.Annotations[v1alpha1.AnnotationRelease]))
			case !apierrors.IsNotFound(err):
				return err
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
	// The cleanup deletes the copies before it lets a FederatedObject go.
	list, err := env.Cluster(memberName).Dynamic.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var copies []string
	for _, g := range list.Items {
		copies = append(copies, g.GetName())
	}
	slices.Sort(copies)
	if !slices.Equal(copies, kept) {
		t.Errorf("member copies after the CRD's deletion: %v, want only %v (annotated %s or %s)", copies, kept, v1alpha1.AnnotationOrphan, v1alpha1.AnnotationDeletionProtection)
	}
}

// gizmoCRD returns the namespaced CRD of the Gizmos of gvr, of one served
// version that keeps any spec.
func gizmoCRD(gvr schema.GroupVersionResource) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gvr.Resource + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvr.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// installGizmos creates the CRD in a cluster, waits until it is served
// and deletes it when the test ends.
func installGizmos(t *testing.T, c *testenv.Cluster, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	cl := newClient(t, c.Config)
	if err := cl.Create(context.Background(), crd.DeepCopy()); err != nil {
		t.Fatalf("create CRD %s in %s: %v", crd.Name, c.Name, err)
	}
	t.Cleanup(func() {
		if err := cl.Delete(context.Background(), crd.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s from %s: %v", crd.Name, c.Name, err)
		}
	})
	testenv.Eventually(t, waitTimeout, "CRD "+crd.Name+" established in "+c.Name, func(ctx context.Context) error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := cl.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		return crds.Established(got)
	})
}

// grantGizmos lets the controller-manager's ServiceAccount read the Gizmos
// of gvr on the host (what an operator grants to propagate a custom kind)
// until the test ends.
func grantGizmos(t *testing.T, gvr schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	name := "flotilla-test-" + gvr.Group
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{gvr.Group}, Resources: []string{gvr.Resource}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: v1alpha1.SystemNamespace, Name: "flotilla-controller-manager"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
		t.Cleanup(func() {
			if err := admin.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T: %v", o, err)
			}
		})
	}
}
