package federate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestNamespaceDeletionSparesAProtectedWorkload: deleting a propagated
// namespace that holds a Deployment protected from deletion leaves the
// Deployment's copy and the member namespace running: the namespace
// controller deletes the Deployment's FederatedObject and policies (by
// hand here too, not to wait for the host's namespace controller; the
// OverridePolicy first, which the namespace controller may do too), whose
// cleanup then waits for the Deployment. The copy keeps what the deleted
// OverridePolicy set: the object is frozen (NamespaceDeleting) from the
// namespace's deletion on. Once the protection is lifted and the
// Deployment deleted, its copy goes; the member namespace goes only when
// the host's is gone.
func TestNamespaceDeletionSparesAProtectedWorkload(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	host := env.Host.Client.CoreV1().Namespaces()
	ns, _ := propagatedNamespace(t, "protected")
	dep, foKey := propagatedDeployment(t, ns)
	annotate(t, *dep, v1alpha1.AnnotationDeletionProtection, "true")
	op := &v1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site"}, Spec: v1alpha1.OverrideSpec{
		ResourceSelectors: deploymentsIn(ns),
		Rules: []v1alpha1.OverrideRule{{Overriders: v1alpha1.Overriders{
			Labels: &v1alpha1.MapOverrider{Set: map[string]string{"example.com/site": "edge"}},
		}}},
	}}
	if err := admin.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	overridden := func(ctx context.Context) error {
		d, err := env.Cluster(memberName).Client.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := d.Labels["example.com/site"]; got != "edge" {
			return fmt.Errorf("the copy's override label is %q, want edge", got)
		}
		return nil
	}
	testenv.Eventually(t, waitTimeout, "the override reaches the copy", overridden)

	// kubectl delete namespace: the namespace controller deletes the
	// policy and the FederatedObject (its deletion of the Deployment is
	// refused); the test does too, whichever comes first.
	if err := host.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, op); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// Unless the namespace controller deleted it first, the FederatedObject
	// says why nothing changes.
	testenv.Eventually(t, waitTimeout, "the FederatedObject frozen or deleted", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil || !fo.DeletionTimestamp.IsZero() {
			return client.IgnoreNotFound(err)
		}
		if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionPropagated); c == nil || c.Reason != string(v1alpha1.PropagationNamespaceDeleting) {
			return fmt.Errorf("Propagated: %+v", c)
		}
		return overridden(ctx)
	})
	if err := admin.Delete(ctx, &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: foKey.Namespace, Name: foKey.Name}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	member := env.Cluster(memberName).Client.CoreV1().Namespaces()
	testenv.Consistently(t, 5*time.Second, func() error {
		if err := overridden(ctx); err != nil {
			return fmt.Errorf("the protected Deployment's copy: %w", err)
		}
		if n, err := member.Get(ctx, ns, metav1.GetOptions{}); err != nil || n.DeletionTimestamp != nil {
			return fmt.Errorf("the member namespace is being deleted: %v", err)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return fmt.Errorf("the FederatedObject, held until the Deployment goes: %w", err)
		}
		return nil
	})

	// The protection lifted, the namespace controller deletes the
	// Deployment; its copy goes with it.
	annotate(t, *dep, v1alpha1.AnnotationDeletionProtection, "false")
	// The host's namespace controller, retrying, may delete it first.
	if err := admin.Delete(ctx, testenv.MakeDeployment(dep.Name, dep.Namespace).Obj()); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s: %v", dep, err)
	}
	waitGone(t, foKey)
	if ok, err := memberCopy(ctx, *dep); ok || err != nil {
		t.Errorf("the Deployment's copy after its deletion: present %v, %v", ok, err)
	}
	if n, err := member.Get(ctx, ns, metav1.GetOptions{}); err != nil || n.DeletionTimestamp != nil {
		t.Errorf("the member namespace is deleted while the host's is terminating: %v", err)
	}

	// The host namespace is gone (finalized by hand, unless the host's
	// namespace controller, which finds it empty now, was first): the
	// member's goes.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := host.Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Finalizers = nil
		_, err = host.Finalize(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the member namespace deleted once the host's is gone", func(ctx context.Context) error {
		n, err := member.Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case n.DeletionTimestamp == nil:
			return errors.New("not being deleted")
		}
		return nil
	})
}

// TestNamespacesCreatedOnDemandAreNotCopies: a host Namespace propagated to
// member-1 only (flotilla.io/keep-on-move: "false", so a copy leaving the
// placement is deleted) leaves alone the member-2 namespace of that name
// that holds a Deployment's copy: one Flotilla created on demand for the
// copy, and one an earlier version created on demand with Flotilla's own
// field manager. Taking either for a copy of the Namespace would delete it
// in member-2, with the Deployment's copy.
func TestNamespacesCreatedOnDemandAreNotCopies(t *testing.T) {
	startControlPlane(t)
	joinSecondMember(t)
	ctx := context.Background()
	host := env.Host.Client.CoreV1().Namespaces()
	second := env.Cluster(secondMember).Client
	suffix := time.Now().UnixNano() % 1e6
	onDemand, legacy := fmt.Sprintf("on-demand-%d", suffix), fmt.Sprintf("legacy-%d", suffix)
	// What an earlier version's on-demand creation left in the member: a
	// bare namespace, prepared and applied as a copy.
	bare := &unstructured.Unstructured{}
	bare.SetAPIVersion("v1")
	bare.SetKind("Namespace")
	bare.SetName(legacy)
	in, err := dispatch.Prepare(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Cluster(secondMember).Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, legacy, in.Object,
		metav1.ApplyOptions{FieldManager: dispatch.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{onDemand, legacy} {
		if _, err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Annotations: map[string]string{v1alpha1.AnnotationKeepOnMove: "false"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = host.Delete(context.Background(), ns, metav1.DeleteOptions{})
			_ = second.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		})
		pp := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: deploymentsIn(ns), Placement: v1alpha1.Placement{ClusterNames: []string{secondMember}}}}
		if err := admin.Create(ctx, pp); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(ctx, testenv.MakeDeployment("web", ns).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	inSecond := func(ctx context.Context) error {
		for _, ns := range []string{onDemand, legacy} {
			n, err := second.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("%s's namespace: %w", secondMember, err)
			}
			if n.DeletionTimestamp != nil {
				return fmt.Errorf("%s's namespace %s is being deleted", secondMember, ns)
			}
			if _, err := second.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s's copy of %s/web: %w", secondMember, ns, err)
			}
		}
		return nil
	}
	testenv.Eventually(t, waitTimeout, "the Deployments' copies in "+secondMember, inSecond)

	// Another Namespace placed in member-2, so that Flotilla watches
	// member-2's namespaces (as a federation that propagates namespaces
	// does): an unrecorded copy is looked for among what it watches.
	warm := fmt.Sprintf("watched-%d", suffix)
	if _, err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: warm}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Delete(context.Background(), warm, metav1.DeleteOptions{}) })
	warmPolicy := &v1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: warm},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Namespace", Name: warm}},
			Placement: v1alpha1.Placement{ClusterNames: []string{secondMember}}},
	}
	if err := admin.Create(ctx, warmPolicy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), warmPolicy) })
	testenv.Eventually(t, waitTimeout, "namespace "+warm+" in "+secondMember, func(ctx context.Context) error {
		_, err := second.CoreV1().Namespaces().Get(ctx, warm, metav1.GetOptions{})
		return err
	})

	cpp := &v1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: onDemand},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: []v1alpha1.ResourceSelector{
			{APIVersion: "v1", Kind: "Namespace", Name: onDemand}, {APIVersion: "v1", Kind: "Namespace", Name: legacy}},
			Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}},
	}
	if err := admin.Create(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cpp) })
	for _, ns := range []string{onDemand, legacy} {
		waitForCluster(t, types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: ns + ".namespace"}, v1alpha1.PropagationOK)
	}
	testenv.Consistently(t, 3*time.Second, func() error {
		for _, ns := range []string{onDemand, legacy} {
			fo := &v1alpha1.FederatedObject{}
			if err := admin.Get(ctx, types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: ns + ".namespace"}, fo); err != nil {
				return err
			}
			for _, c := range fo.Status.Clusters {
				if c.Cluster == secondMember {
					return fmt.Errorf("Namespace %s counts %s's namespace as its copy: %+v", ns, secondMember, c)
				}
			}
		}
		return inSecond(ctx)
	})
}

// TestForcedNamespaceFinalizationSparesAProtectedWorkload: the usual way
// out of a namespace stuck Terminating, emptying its spec.finalizers,
// removes the host namespace while a protected Deployment is still stored
// in it. The member namespace stays, with the Deployment's copy, while the
// Deployment is there (the Namespace's FederatedObject waits); once the
// namespace is created again, the protection lifted and the Deployment
// deleted, that FederatedObject's cleanup goes on.
func TestForcedNamespaceFinalizationSparesAProtectedWorkload(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	host := env.Host.Client.CoreV1().Namespaces()
	ns, nsKey := propagatedNamespace(t, "forced")
	nsFO := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, nsKey, nsFO); err != nil {
		t.Fatal(err)
	}
	dep, _ := propagatedDeployment(t, ns)
	annotate(t, *dep, v1alpha1.AnnotationDeletionProtection, "true")

	if err := host.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// What `kubectl replace --raw /api/v1/namespaces/NS/finalize` with no
	// spec.finalizers does.
	testenv.Eventually(t, waitTimeout, "the host namespace finalized by hand and gone", func(ctx context.Context) error {
		n, err := host.Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		n.Spec.Finalizers = nil
		if _, err := host.Finalize(ctx, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return errors.New("finalized; waiting for it to go")
	})
	if err := admin.Get(ctx, *dep, testenv.MakeDeployment(dep.Name, dep.Namespace).Obj()); err != nil {
		t.Fatalf("the protected Deployment outlives its namespace on the host: %v", err)
	}
	member := env.Cluster(memberName).Client.CoreV1().Namespaces()
	testenv.Consistently(t, 5*time.Second, func() error {
		if n, err := member.Get(ctx, ns, metav1.GetOptions{}); err != nil || n.DeletionTimestamp != nil {
			return fmt.Errorf("the member namespace is being deleted: %v", err)
		}
		if ok, err := memberCopy(ctx, *dep); !ok || err != nil {
			return fmt.Errorf("the protected Deployment's copy: present %v, %v", ok, err)
		}
		return nil
	})

	// The way out: the namespace again, then the protection lifted and the
	// Deployment deleted (objects of a missing namespace cannot be
	// changed).
	if _, err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	annotate(t, *dep, v1alpha1.AnnotationDeletionProtection, "false")
	if err := admin.Delete(ctx, testenv.MakeDeployment(dep.Name, dep.Namespace).Obj()); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete %s: %v", dep, err)
	}
	testenv.Eventually(t, waitTimeout, "the gone namespace's FederatedObject cleaned up once the protected Deployment is gone", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, nsKey, fo); apierrors.IsNotFound(err) || (err == nil && fo.UID != nsFO.UID) {
			return nil
		} else if err != nil {
			return err
		}
		return fmt.Errorf("still there (deleting since %v, finalizers %v)", fo.DeletionTimestamp, fo.Finalizers)
	})
}

// propagatedNamespace creates a host namespace named prefix-<n>, places it
// on the first member with a ClusterPropagationPolicy (both deleted when
// the test ends), waits until its copy is OK there, and returns its name
// and its FederatedObject's key.
func propagatedNamespace(t *testing.T, prefix string) (string, types.NamespacedName) {
	t.Helper()
	ctx := context.Background()
	host := env.Host.Client.CoreV1().Namespaces()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	if _, err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cpp := &v1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Namespace", Name: ns}},
			Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}},
	}
	if err := admin.Create(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cpp) })
	key := types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: ns + ".namespace"}
	waitForCluster(t, key, v1alpha1.PropagationOK)
	return ns, key
}
