package agent_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// scaleMemberCopy sets the replicas of the member's copy of ns/name, as an
// operator would in the member.
func scaleMemberCopy(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := memberDeployment(ctx, ns, name)
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		_, err = env.Cluster("member-1").Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("scale the member copy of %s/%s: %v", ns, name, err)
	}
}

// waitMemberReplicas waits until the member's copy of ns/name asks for
// replicas.
func waitMemberReplicas(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("the member copy of %s asks for %d replicas", name, replicas), func(ctx context.Context) error {
		d, err := memberDeployment(ctx, ns, name)
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != replicas {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}

// TestPullSuspend: suspending a pull member's object reaches its agent
// (the intent is marked suspended and reported Suspended), which then
// leaves member-side edits alone while it still reverts those of a
// control object edited after them; resuming makes the agent apply the
// federation's fields again.
func TestPullSuspend(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	for _, name := range []string{"web", "control"} {
		if err := admin.Create(ctx, testenv.MakeDeployment(name, ns).Replicas(2).Obj()); err != nil {
			t.Fatal(err)
		}
		waitForCluster(t, ns, name, v1alpha1.PropagationOK)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&dep.ObjectMeta, v1alpha1.AnnotationSuspend, "true")
		return admin.Update(ctx, dep)
	}); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "web", v1alpha1.PropagationSuspended)
	testenv.Eventually(t, waitTimeout, "the agent reports the intent Suspended", func(ctx context.Context) error {
		ci, err := intentOf(ctx, ns, "web")
		if err != nil {
			return err
		}
		if !ci.Spec.Suspended || ci.Status.Outcome != v1alpha1.IntentSuspended || ci.Status.ObservedGeneration != ci.Generation {
			return fmt.Errorf("intent spec.suspended %v, status %s at generation %d of %d", ci.Spec.Suspended, ci.Status.Outcome, ci.Status.ObservedGeneration, ci.Generation)
		}
		return nil
	})

	scaleMemberCopy(t, ns, "web", 5)
	scaleMemberCopy(t, ns, "control", 5)
	waitMemberReplicas(t, ns, "control", 2)
	d, err := memberDeployment(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("suspended copy asks for %d replicas after the control copy was reverted, want the member's 5 kept", *d.Spec.Replicas)
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
			return err
		}
		delete(dep.Annotations, v1alpha1.AnnotationSuspend)
		return admin.Update(ctx, dep)
	}); err != nil {
		t.Fatal(err)
	}
	waitMemberReplicas(t, ns, "web", 2)
	waitForCluster(t, ns, "web", v1alpha1.PropagationOK)
}
