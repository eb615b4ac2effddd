package federate_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// setMemberImage edits the member's copy of Deployment key the way an
// operator would in an emergency (kubectl set image in the member).
func setMemberImage(t *testing.T, key types.NamespacedName, image string) {
	t.Helper()
	ctx := context.Background()
	deps := env.Cluster(memberName).Client.AppsV1().Deployments(key.Namespace)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deps.Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("edit the member copy of %s: %v", key, err)
	}
}

// memberImage returns the image of the member's copy of Deployment key.
func memberImage(ctx context.Context, key types.NamespacedName) (string, error) {
	d, err := env.Cluster(memberName).Client.AppsV1().Deployments(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return d.Spec.Template.Spec.Containers[0].Image, nil
}

// waitMemberImage waits until the member's copy of key runs image.
func waitMemberImage(t *testing.T, key types.NamespacedName, image string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("the member copy of %s runs %s", key, image), func(ctx context.Context) error {
		got, err := memberImage(ctx, key)
		if err != nil {
			return err
		}
		if got != image {
			return fmt.Errorf("image %s", got)
		}
		return nil
	})
}

// setHostImage changes the host Deployment's image.
func setHostImage(t *testing.T, key types.NamespacedName, image string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := testenv.MakeDeployment(key.Name, key.Namespace).Obj()
		if err := admin.Get(context.Background(), key, dep); err != nil {
			return err
		}
		dep.Spec.Template.Spec.Containers[0].Image = image
		return admin.Update(context.Background(), dep)
	}); err != nil {
		t.Fatalf("set the image of %s: %v", key, err)
	}
}

// TestSuspendKeepsMemberEdits: flotilla.io/suspend on the host object (the
// emergency fallback) stops every write to the member: an edit made in the
// member stays, a template change is not applied, the FederatedObject says
// Suspended. Removing the annotation applies the federation's fields
// again. A control Deployment beside it, edited after it, is reverted:
// the controller saw both edits.
func TestSuspendKeepsMemberEdits(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createPolicy(t, ns)
	web := types.NamespacedName{Namespace: ns, Name: "web"}
	ctl := types.NamespacedName{Namespace: ns, Name: "control"}
	for _, key := range []types.NamespacedName{web, ctl} {
		if err := admin.Create(ctx, testenv.MakeDeployment(key.Name, ns).Obj()); err != nil {
			t.Fatal(err)
		}
		waitForCluster(t, types.NamespacedName{Namespace: ns, Name: key.Name + ".deployment.apps"}, v1alpha1.PropagationOK)
	}
	foKey := types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}
	hostImage, err := memberImage(ctx, web)
	if err != nil {
		t.Fatal(err)
	}

	annotate(t, web, v1alpha1.AnnotationSuspend, "true")
	st := waitForCluster(t, foKey, v1alpha1.PropagationSuspended)
	fo := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, foKey, fo); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionPropagated); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Suspended" {
		t.Errorf("Propagated condition %+v, want False/Suspended", c)
	}
	if ev := findEvent(ctx, t, ns, "Deployment", "web", "Suspended"); ev == nil {
		t.Errorf("no Suspended event on the host Deployment (cluster status %+v)", st)
	}

	// The emergency edit in the member, a template change on the host, and
	// then an edit of the control copy.
	setMemberImage(t, web, "example.com/hotfix:1")
	setHostImage(t, web, "example.com/web:2")
	setMemberImage(t, ctl, "example.com/hotfix:1")
	waitMemberImage(t, ctl, hostImage)
	if got, err := memberImage(ctx, web); err != nil || got != "example.com/hotfix:1" {
		t.Errorf("suspended copy runs %q (%v) after the control copy was reverted; want the member's edit example.com/hotfix:1 kept", got, err)
	}

	// Resume: the federation's fields, the new template included, return.
	annotate(t, web, v1alpha1.AnnotationSuspend, "false")
	waitMemberImage(t, web, "example.com/web:2")
	waitForCluster(t, foKey, v1alpha1.PropagationOK)
}

// TestDeletingASuspendedObjectKeepsItsCopies: while suspended nothing is
// deleted either; deleting the host object releases its copy as an
// orphan.
func TestDeletingASuspendedObjectKeepsItsCopies(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	dep, foKey := propagatedDeployment(t, ns)
	annotate(t, *dep, v1alpha1.AnnotationSuspend, "true")
	waitForCluster(t, foKey, v1alpha1.PropagationSuspended)
	if err := admin.Delete(context.Background(), testenv.MakeDeployment(dep.Name, ns).Obj(), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	keptAfterCleanup(t, *dep)
}
