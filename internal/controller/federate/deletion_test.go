package federate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// Deletion without a template finalizer: a deleted template is gone at
// once; its FederatedObject (deleted by federate, or by the garbage
// collector through its owner reference) deletes or keeps the member
// copies.

// template returns the host Deployment, nil once it is gone.
func template(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	dep := &metav1.PartialObjectMetadata{}
	dep.SetGroupVersionKind(deploymentGVK)
	if err := admin.Get(ctx, key, dep); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return dep, nil
}

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// memberCopy reports whether the member holds the copy of a Deployment.
func memberCopy(ctx context.Context, key types.NamespacedName) (bool, error) {
	_, err := env.Cluster(memberName).Client.AppsV1().Deployments(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// waitGone waits until the FederatedObject is gone: its cleanup is done.
func waitGone(t *testing.T, foKey types.NamespacedName) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "FederatedObject "+foKey.String()+" gone", func(ctx context.Context) error {
		err := admin.Get(ctx, foKey, &v1alpha1.FederatedObject{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("FederatedObject: %v", err)
	})
}

// waitRelease waits until the FederatedObject records release mode want
// ("" for none).
func waitRelease(t *testing.T, foKey types.NamespacedName, want string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("FederatedObject %s with %s=%q", foKey, v1alpha1.AnnotationRelease, want), func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		if got, ok := fo.Annotations[v1alpha1.AnnotationRelease]; got != want || (want == "" && ok) {
			return fmt.Errorf("annotations %v", fo.Annotations)
		}
		return nil
	})
}

// deleteTemplate deletes a host Deployment.
func deleteTemplate(t *testing.T, key types.NamespacedName) {
	t.Helper()
	if err := admin.Delete(context.Background(), testenv.MakeDeployment(key.Name, key.Namespace).Obj()); err != nil {
		t.Errorf("delete %s: %v", key, err)
	}
}

// keptAfterCleanup checks that the member copy of Deployment dep is still
// there once its FederatedObject is gone (its finalizer would have held it
// until a copy to delete was deleted).
func keptAfterCleanup(t *testing.T, dep types.NamespacedName) {
	t.Helper()
	waitGone(t, types.NamespacedName{Namespace: dep.Namespace, Name: dep.Name + ".deployment.apps"})
	if ok, err := memberCopy(context.Background(), dep); !ok || err != nil {
		t.Errorf("member copy of %s after the release: present %v, %v; want it kept", dep, ok, err)
	}
}

// propagatedDeployments creates n Deployments web-0… in ns with a policy
// that places them on the member, and waits until each is propagated.
func propagatedDeployments(t *testing.T, ns string, n int) []types.NamespacedName {
	t.Helper()
	createPolicy(t, ns)
	var deps []types.NamespacedName
	for i := range n {
		dep := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}
		if err := admin.Create(context.Background(), testenv.MakeDeployment(dep.Name, ns).Obj()); err != nil {
			t.Fatal(err)
		}
		deps = append(deps, dep)
	}
	for _, dep := range deps {
		waitForCluster(t, types.NamespacedName{Namespace: ns, Name: dep.Name + ".deployment.apps"}, v1alpha1.PropagationOK)
	}
	return deps
}

// TestNoTemplateFinalizer: a propagated template carries no finalizer and
// no Federated event is recorded on it; deleting it removes it at once and
// then the member copy and the FederatedObject.
func TestNoTemplateFinalizer(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dep, foKey := propagatedDeployment(t, ns)

	got, err := template(ctx, *dep)
	if err != nil || got == nil {
		t.Fatalf("host Deployment: %v, %v", got, err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("host Deployment finalizers %v, want none", got.Finalizers)
	}
	if e := findEvent(ctx, t, ns, "Deployment", "web", "Federated"); e != nil {
		t.Errorf("event %s %q recorded on the template, want none", e.Reason, e.Note)
	}

	deleteTemplate(t, *dep)
	testenv.Eventually(t, waitTimeout, "host Deployment gone", func(ctx context.Context) error {
		if got, err := template(ctx, *dep); err != nil || got != nil {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	waitCopyGone(t, ns)
	waitGone(t, foKey)
}

// TestOrphanAnnotationRecorded: while the template carries
// flotilla.io/orphan: "true", its FederatedObject records the release
// mode orphan (and loses it with the annotation); deleting the template
// keeps the member copy.
func TestOrphanAnnotationRecorded(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	dep, foKey := propagatedDeployment(t, ns)

	annotate(t, *dep, v1alpha1.AnnotationOrphan, "true")
	waitRelease(t, foKey, v1alpha1.ReleaseOrphan)
	annotate(t, *dep, v1alpha1.AnnotationOrphan, "false")
	waitRelease(t, foKey, "")
	annotate(t, *dep, v1alpha1.AnnotationOrphan, "true")
	waitRelease(t, foKey, v1alpha1.ReleaseOrphan)

	deleteTemplate(t, *dep)
	keptAfterCleanup(t, *dep)
}

// TestAnnotateThenDeleteKeepsCopies: the orphan annotation set just
// before the delete, with no wait, still keeps the copies: the
// FederatedObject records it if federate sees the annotated template,
// otherwise the template cache remembers the deleted object's final
// state. Several objects at once, so that both happen.
func TestAnnotateThenDeleteKeepsCopies(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	deps := propagatedDeployments(t, ns, 8)

	var wg sync.WaitGroup
	for _, dep := range deps {
		wg.Go(func() {
			// One update, then the delete at once (no wait).
			obj := testenv.MakeDeployment(dep.Name, ns).Obj()
			if err := admin.Get(ctx, dep, obj); err != nil {
				t.Errorf("get %s: %v", dep, err)
				return
			}
			obj.Annotations = map[string]string{v1alpha1.AnnotationOrphan: "true"}
			if err := admin.Update(ctx, obj); err != nil {
				t.Errorf("annotate %s: %v", dep, err)
				return
			}
			deleteTemplate(t, dep)
		})
	}
	wg.Wait()
	for _, dep := range deps {
		keptAfterCleanup(t, dep)
	}
}

// TestDeletedTogetherDeletesEveryCopy: a template deleted and, right
// after, its FederatedObject, as the garbage collector does, loses its
// member copy. The collector acts on its own watch of the templates, which
// may run ahead of the template cache's: a cleanup that trusted the cache
// would find the template alive, take the deletion for a FederatedObject
// deleted by hand, and keep the copy of an object that is gone. Many
// objects at once, so that the cache is behind for some.
func TestDeletedTogetherDeletesEveryCopy(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	deps := propagatedDeployments(t, ns, 24)
	var wg sync.WaitGroup
	for _, dep := range deps {
		wg.Go(func() {
			deleteTemplate(t, dep)
			fo := &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name + ".deployment.apps"}}
			if err := admin.Delete(ctx, fo); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete FederatedObject of %s: %v", dep, err)
			}
		})
	}
	wg.Wait()
	for _, dep := range deps {
		waitGone(t, types.NamespacedName{Namespace: ns, Name: dep.Name + ".deployment.apps"})
	}
	// The cleanup deletes the copies before it lets the FederatedObject go.
	testenv.Eventually(t, 10*time.Second, "every member copy deleted", func(ctx context.Context) error {
		var kept []string
		for _, dep := range deps {
			ok, err := memberCopy(ctx, dep)
			if err != nil {
				return err
			}
			if ok {
				kept = append(kept, dep.Name)
			}
		}
		if len(kept) > 0 {
			return fmt.Errorf("copies kept after their FederatedObjects were released: %v", kept)
		}
		return nil
	})
}

// TestLegacyFinalizerRemoved: a template carrying the finalizer of an
// earlier version (a host upgraded from it, which grants patch for the
// upgrade) loses it, and is propagated.
func TestLegacyFinalizerRemoved(t *testing.T) {
	startControlPlane(t)
	env.GrantControllerLegacyFinalizer(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createPolicy(t, ns)
	obj := testenv.MakeDeployment("web", ns).Obj()
	obj.Finalizers = []string{v1alpha1.FinalizerPropagation}
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	waitForCluster(t, types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}, v1alpha1.PropagationOK)
	testenv.Eventually(t, waitTimeout, "legacy finalizer removed", func(ctx context.Context) error {
		got, err := template(ctx, key)
		if err != nil || got == nil {
			return fmt.Errorf("host Deployment: %v, %v", got, err)
		}
		if len(got.Finalizers) != 0 {
			return fmt.Errorf("finalizers %v", got.Finalizers)
		}
		return nil
	})
}

// TestLegacyFinalizerNeedsTheUpgradeGrant: without the upgrade's grant
// the controller-manager may not patch templates (a ConfigMap here; it may
// patch Deployments, for federated HPAs); a legacy finalizer then stays,
// the object is propagated all the same, and a Warning event says what to
// grant.
func TestLegacyFinalizerNeedsTheUpgradeGrant(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	pp := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conf"},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "conf"}},
			Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}}}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conf", Finalizers: []string{v1alpha1.FinalizerPropagation}},
		Data: map[string]string{"k": "v"}}
	if err := admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "conf"}
	t.Cleanup(func() { // let the namespace go
		got := &corev1.ConfigMap{}
		if err := admin.Get(context.Background(), key, got); err == nil && len(got.Finalizers) > 0 {
			got.Finalizers = nil
			_ = admin.Update(context.Background(), got)
		}
	})
	waitForCluster(t, types.NamespacedName{Namespace: ns, Name: "conf.configmap"}, v1alpha1.PropagationOK)
	testenv.Eventually(t, waitTimeout, "FinalizerNotRemoved event naming the grant", func(ctx context.Context) error {
		ev := findEvent(ctx, t, ns, "ConfigMap", "conf", federate.ReasonFinalizerNotRemoved)
		if ev == nil {
			return errNotYet
		}
		if !strings.Contains(ev.Note, "forbidden") || !strings.Contains(ev.Note, "legacy-finalizer.yaml") {
			return fmt.Errorf("event note %q", ev.Note)
		}
		return nil
	})
	got := &corev1.ConfigMap{}
	if err := admin.Get(ctx, key, got); err != nil || !slices.Contains(got.Finalizers, v1alpha1.FinalizerPropagation) {
		t.Fatalf("host ConfigMap finalizers %v (%v): the finalizer was removed without the grant", got.Finalizers, err)
	}
}

// TestLegacyFinalizerHoldsDeletion: a template that still carries the
// legacy finalizer when it is deleted (here an admission policy stops the
// controller-manager from removing it while the template lives) is
// released as before: its copy is deleted first, then the finalizer is
// removed and the template goes. The refused removal is reported once.
func TestLegacyFinalizerHoldsDeletion(t *testing.T) {
	startControlPlane(t)
	env.GrantControllerLegacyFinalizer(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	pinLegacyFinalizer(t, ns)

	createPolicy(t, ns)
	obj := testenv.MakeDeployment("web", ns).Obj()
	obj.Finalizers = []string{v1alpha1.FinalizerPropagation}
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	foKey := types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}
	waitForCluster(t, foKey, v1alpha1.PropagationOK)
	testenv.Eventually(t, waitTimeout, "FinalizerNotRemoved event", func(ctx context.Context) error {
		if findEvent(ctx, t, ns, "Deployment", "web", federate.ReasonFinalizerNotRemoved) == nil {
			return errNotYet
		}
		return nil
	})

	deleteTemplate(t, key)
	testenv.Eventually(t, waitTimeout, "host Deployment gone", func(ctx context.Context) error {
		if got, err := template(ctx, key); err != nil || got != nil {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	// The finalizer was removed after the release: nothing is left.
	if ok, err := memberCopy(ctx, key); ok || err != nil {
		t.Errorf("member copy when the template went: present %v, %v; want it deleted first", ok, err)
	}
	if err := admin.Get(ctx, foKey, &v1alpha1.FederatedObject{}); !apierrors.IsNotFound(err) {
		t.Errorf("FederatedObject when the template went: %v, want it gone first", err)
	}
}

// createPolicy creates a PropagationPolicy placing the Deployments of ns
// on the member.
func createPolicy(t *testing.T, ns string) {
	t.Helper()
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.PropagationSpec{ResourceSelectors: deploymentsIn(ns), Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}},
	}
	if err := admin.Create(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
}

// pinLegacyFinalizer installs, for the test's namespace, an admission
// policy that refuses the controller-manager's removal of the legacy
// finalizer from a Deployment that is not being deleted, and waits until
// the host enforces it.
func pinLegacyFinalizer(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	name := "test-pin-legacy-finalizer-" + ns
	vap := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "controller-manager",
				Expression: fmt.Sprintf("request.userInfo.username == %q", rbac.Username),
			}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("has(oldObject.metadata.deletionTimestamp) || !has(oldObject.metadata.finalizers) || !(%[1]q in oldObject.metadata.finalizers) || (has(object.metadata.finalizers) && %[1]q in object.metadata.finalizers)", v1alpha1.FinalizerPropagation),
				Reason:     ptr.To(metav1.StatusReasonForbidden),
				Message:    "test: the legacy finalizer stays while the object lives",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	for _, o := range []client.Object{vap, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, name, err)
		}
		t.Cleanup(func() {
			if err := admin.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("delete %T %s: %v", o, name, err)
			}
		})
	}
	// A probe Deployment (no policy selects it yet) with the finalizer: a
	// dry-run removal as the controller-manager is refused once the
	// policy is in force. federate may remove the finalizer before: put
	// it back.
	probe := types.NamespacedName{Namespace: ns, Name: "probe"}
	obj := testenv.MakeDeployment(probe.Name, ns).Obj()
	obj.Finalizers = []string{v1alpha1.FinalizerPropagation}
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	controller := newClient(t, env.ControllerConfig(t))
	testenv.Eventually(t, waitTimeout, "admission policy in force", func(ctx context.Context) error {
		cur := testenv.MakeDeployment(probe.Name, ns).Obj()
		if err := admin.Get(ctx, probe, cur); err != nil {
			return err
		}
		if len(cur.Finalizers) == 0 {
			cur.Finalizers = []string{v1alpha1.FinalizerPropagation}
			if err := admin.Update(ctx, cur); err != nil {
				return err
			}
			return errNotYet
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`))
		err := controller.Patch(ctx, cur, patch, client.DryRunAll)
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return nil
		}
		return fmt.Errorf("dry-run removal as the controller-manager: %v", err)
	})
	// Deleted, the probe loses its finalizer (federate may remove it now)
	// and goes.
	if err := admin.Delete(ctx, testenv.MakeDeployment(probe.Name, ns).Obj()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "probe Deployment gone", func(ctx context.Context) error {
		if got, err := template(ctx, probe); err != nil || got != nil {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// TestTemplateCacheRemembersFinalState: a template cache of its own
// (watching the host as the admin) answers, as soon as a deleted object
// is gone from it, with the orphan annotation of the object's final state:
// set just before the delete, or removed just before it.
func TestTemplateCacheRemembersFinalState(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	host := newClient(t, env.Host.Config)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cache, err := templates.New(env.Host.Config, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := cache.Start(ctx); err != nil {
			t.Errorf("template cache: %v", err)
		}
	}()
	if !cache.WaitForSync(ctx) {
		t.Fatal("template cache did not sync")
	}
	cm := func(name string, annotations map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	}
	tests := []struct {
		name        string
		before, set map[string]string
		want        bool
	}{
		{"annotated just before the delete", nil, map[string]string{v1alpha1.AnnotationOrphan: "true"}, true},
		{"annotation removed just before the delete", map[string]string{v1alpha1.AnnotationOrphan: "true"}, map[string]string{}, false},
		{"never annotated", nil, map[string]string{"a": "b"}, false},
		{"annotated all along", map[string]string{v1alpha1.AnnotationOrphan: "true"}, map[string]string{v1alpha1.AnnotationOrphan: "true", "a": "b"}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := cm(fmt.Sprintf("cm-%d", i), tt.before)
			if err := host.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			key := templates.Key{Kind: "ConfigMap", Namespace: ns, Name: obj.Name}
			// Seen first, so that "gone" below means its deletion arrived,
			// not that its creation had not yet.
			testenv.Eventually(t, waitTimeout, "ConfigMap in the cache", func(context.Context) error {
				if got, err := cache.Get(key); err != nil || got == nil {
					return fmt.Errorf("not cached yet (%v)", err)
				}
				return nil
			})
			obj.Annotations = tt.set
			if err := host.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
			if err := host.Delete(ctx, obj); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, waitTimeout, "ConfigMap gone from the cache", func(context.Context) error {
				if got, err := cache.Get(key); err != nil || got != nil {
					return fmt.Errorf("still cached (%v)", err)
				}
				return nil
			})
			if got := cache.LastSeenOrphan(key, obj.UID); got != tt.want {
				t.Errorf("LastSeenOrphan once gone = %v, want %v", got, tt.want)
			}
		})
	}
}
