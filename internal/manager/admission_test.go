package manager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/admission"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func TestAdmissionInstallNeedsLeadership(t *testing.T) {
	if !(admissionInstaller{}).NeedLeaderElection() {
		t.Fatal("the admission policy install would run on standbys")
	}
}

// The leader installs deletion protection: deleting a ConfigMap or a
// namespace annotated flotilla.io/deletion-protection=true is refused with
// a message that says how to delete it; once the annotation is removed,
// the deletion goes through. Objects without the annotation are not
// affected.
func TestDeletionProtection(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	opts := DefaultOptions()
	opts.Controllers = nil
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElectionID = "admission-test"
	opts.RetryPeriod = 500 * time.Millisecond
	mgr := startManager(t, opts)
	select {
	case <-mgr.Elected():
	case <-time.After(time.Minute):
		t.Fatal("not elected within a minute")
	}

	cs := env.Host.Client
	ns := env.Namespace(t)
	protected := map[string]string{v1alpha1.AnnotationDeletionProtection: "true"}
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Annotations: protected}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Annotations: map[string]string{v1alpha1.AnnotationDeletionProtection: "false"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver loads new policies asynchronously: a dry-run delete
	// goes through admission without deleting anything.
	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	testenv.Eventually(t, time.Minute, "the deletion of ConfigMap guarded refused", func(ctx context.Context) error {
		err := cms.Delete(ctx, "guarded", dryRun)
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return fmt.Errorf("dry-run delete returned %v", err)
		}
		return nil
	})
	err := cms.Delete(ctx, "guarded", metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap "+ns+"/guarded is protected from deletion") || !strings.Contains(err.Error(), "remove the annotation first") {
		t.Fatalf("deleting a protected ConfigMap: got %v, want a refusal naming the object and the way out", err)
	}
	if _, err := cms.Get(ctx, "guarded", metav1.GetOptions{}); err != nil {
		t.Fatalf("protected ConfigMap gone: %v", err)
	}
	if err := cms.Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a ConfigMap whose annotation is not \"true\": %v", err)
	}
	// A collection delete goes through admission per object too.
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err == nil {
		t.Error("deleting the namespace's ConfigMaps as a collection was not refused")
	}
	if _, err := cms.Get(ctx, "guarded", metav1.GetOptions{}); err != nil {
		t.Fatalf("protected ConfigMap gone after a collection delete: %v", err)
	}

	// A protected namespace.
	nsName := ns + "-ns"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName, Annotations: protected}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, nsName, metav1.DeleteOptions{}); err == nil {
		t.Error("deleting a protected namespace was not refused")
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, nsName, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("protected namespace: %v, deletionTimestamp %v", err, got.GetDeletionTimestamp())
	}

	// Removing the annotation lets both go.
	unprotect := []byte(`{"metadata":{"annotations":{"` + v1alpha1.AnnotationDeletionProtection + `":null}}}`)
	if _, err := cms.Patch(ctx, "guarded", "application/merge-patch+json", unprotect, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the ConfigMap once unprotected: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, nsName, "application/merge-patch+json", unprotect, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, nsName, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the namespace once unprotected: %v", err)
	}
}

// Ensure writes nothing when the policies are up to date, and restores a
// policy someone changed.
func TestAdmissionEnsureIsIdempotent(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	if _, err := admission.Ensure(ctx, env.Host.Config); err != nil {
		t.Fatal(err)
	}
	res, err := admission.Ensure(ctx, env.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created)+len(res.Updated) > 0 {
		t.Errorf("a second Ensure wrote %v", res)
	}

	// Someone switches the binding to audit only.
	bindings := env.Host.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	b, err := bindings.Get(ctx, admission.DeletionProtectionName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	b.Annotations[admission.AnnotationManifestHash] = "edited"
	if _, err := bindings.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = admission.Ensure(ctx, env.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ValidatingAdmissionPolicyBinding/" + admission.DeletionProtectionName; len(res.Updated) != 1 || res.Updated[0] != want {
		t.Errorf("Ensure after an edit: %+v, want %s updated", res, want)
	}
	b, err = bindings.Get(ctx, admission.DeletionProtectionName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
		t.Errorf("binding actions %v after Ensure, want [Deny]", b.Spec.ValidationActions)
	}
}

// The leader installs scale-down protection: in a namespace that limits
// scale-downs to 50%, a Deployment going from 10 to 2 replicas (through
// its spec or its scale subresource) is refused with the way to mean it;
// 10 to 5 passes, as does 5 to 1 with flotilla.io/scale-down-to=1; a
// workload's own limit wins over its namespace's, and workloads of
// namespaces without a limit are not affected.
func TestScaleDownProtection(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	if _, err := admission.Ensure(ctx, env.Host.Config, admission.ScaleDownProtection); err != nil {
		t.Fatal(err)
	}
	cs := env.Host.Client
	ns := env.Namespace(t)
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"flotilla.io/scale-down-limit":"50"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deps := cs.AppsV1().Deployments(ns)
	if _, err := deps.Create(ctx, testenv.MakeDeployment("web", ns).Replicas(10).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas := func(n int, extra string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%s}},"spec":{"replicas":%d}}`, extra, n))
	}
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	testenv.Eventually(t, time.Minute, "the policy refuses 10 -> 2", func(ctx context.Context) error {
		_, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(2, ""), dryRun)
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			return fmt.Errorf("dry-run patch returned %v", err)
		}
		return nil
	})
	_, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(2, ""), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "from 10 to 2 replicas removes 80%") || !strings.Contains(err.Error(), "flotilla.io/scale-down-to=2") {
		t.Fatalf("10 -> 2: %v, want a refusal with the way to mean it", err)
	}
	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "scale subresource carries no annotations") {
		t.Errorf("10 -> 1 through /scale: %v, want a refusal", err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(5, ""), metav1.PatchOptions{}); err != nil {
		t.Errorf("10 -> 5 (50%%): %v", err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(1, `"flotilla.io/scale-down-to":"1"`), metav1.PatchOptions{}); err != nil {
		t.Errorf("5 -> 1 with the intent: %v", err)
	}
	// The intent named 1: it does not let a later step through. The
	// workload's own limit (90%) wins over the namespace's.
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(10, ""), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(0, ""), metav1.PatchOptions{}); err == nil {
		t.Error("10 -> 0 with an intent for 1 was not refused")
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(1, ""), metav1.PatchOptions{}); err == nil {
		t.Error("10 -> 1 with the intent for 1 left from an earlier change was not refused")
	}
	// Scaling to 0 through /scale (a Scale omits replicas 0).
	scale, err = deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 0
	if _, err := deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "from 10 to 0 replicas") {
		t.Errorf("10 -> 0 through /scale: %v, want a refusal", err)
	}
	// A change cannot lift its own limit: raising it (or removing it, as a
	// manifest applied without the annotation does) while scaling down is
	// judged by the limit in force before.
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(1, `"flotilla.io/scale-down-limit":"90","flotilla.io/scale-down-to":null`), metav1.PatchOptions{}); err == nil || !strings.Contains(err.Error(), "at most 50%") || !strings.Contains(err.Error(), "the limit in force before this change") {
		t.Errorf("10 -> 1 while raising the workload's limit to 90%%: %v, want a refusal under the 50%% in force", err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(10, `"flotilla.io/scale-down-limit":"20"`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(5, `"flotilla.io/scale-down-limit":null`), metav1.PatchOptions{}); err == nil || !strings.Contains(err.Error(), "at most 20%") {
		t.Errorf("10 -> 5 while removing the workload's 20%% limit: %v, want a refusal under the 20%% in force", err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(10, `"flotilla.io/scale-down-limit":"90"`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", replicas(1, `"flotilla.io/scale-down-to":null`), metav1.PatchOptions{}); err != nil {
		t.Errorf("10 -> 1 under the workload's own 90%% limit: %v", err)
	}
	// Another namespace sets no limit.
	free := env.Namespace(t)
	if _, err := cs.AppsV1().Deployments(free).Create(ctx, testenv.MakeDeployment("web", free).Replicas(10).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(free).Patch(ctx, "web", "application/merge-patch+json", replicas(0, ""), metav1.PatchOptions{}); err != nil {
		t.Errorf("10 -> 0 without a limit: %v", err)
	}
}
