package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/pull"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestLeavingMemberKeepsCopies: deleting a pull member's hub namespace
// (by mistake) deletes its intents but not the member's copies, and
// neither does removing its MemberCluster, which lets the namespace go:
// the agent deletes a copy only when its own object's intent goes.
func TestLeavingMemberKeepsCopies(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	const name = "pull-leaving"
	creds, err := join.JoinPull(ctx, join.PullOptions{Name: name, Host: env.Host.Config, TokenDuration: time.Hour})
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	hub, err := clientcmd.RESTConfigFromKubeConfig(creds.Agent)
	if err != nil {
		t.Fatal(err)
	}
	// A second agent on member-1, beside the package's pull member's.
	runAgent(t, name, "leaving-agent", func(o *agent.Options) { o.Hub = hub })
	waitCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionTrue)

	ns := env.Namespace(t)
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{name}},
	})
	if err := admin.Create(ctx, testenv.MakeDeployment("keep", ns).Replicas(1).Obj()); err != nil {
		t.Fatal(err)
	}
	hubNS := v1alpha1.ClusterNamespace(name)
	key := types.NamespacedName{Namespace: hubNS, Name: pull.IntentName(schema.GroupResource{Group: "apps", Resource: "deployments"}, ns, "keep")}
	var intentUID types.UID
	testenv.Eventually(t, waitTimeout, "the copy in the member and its intent", func(ctx context.Context) error {
		ci := &v1alpha1.ClusterIntent{}
		if err := admin.Get(ctx, key, ci); err != nil {
			return err
		}
		intentUID = ci.UID
		_, err := memberDeployment(ctx, ns, "keep")
		return err
	})
	before, err := memberDeployment(ctx, ns, "keep")
	if err != nil {
		t.Fatal(err)
	}
	kept := func(what string) {
		t.Helper()
		copy, err := memberDeployment(ctx, ns, "keep")
		if err != nil {
			t.Fatalf("%s: the member's copy: %v, want it kept", what, err)
		}
		if copy.UID != before.UID || copy.DeletionTimestamp != nil {
			t.Fatalf("%s: the member's copy has uid %s (was %s), deleting since %v; want it kept", what, copy.UID, before.UID, copy.DeletionTimestamp)
		}
	}

	// The namespace's deletion marks the intent deleted. The agent's own
	// ServiceAccount goes with the namespace, so the agent may or may not
	// get to let the intent go; either way the copy stays.
	if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubNS}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the intent deleted with its namespace", func(ctx context.Context) error {
		ci := &v1alpha1.ClusterIntent{}
		err := admin.Get(ctx, key, ci)
		if apierrors.IsNotFound(err) || (err == nil && (ci.UID != intentUID || !ci.DeletionTimestamp.IsZero())) {
			return nil
		}
		return fmt.Errorf("intent %v, deleting since %v", err, ci.DeletionTimestamp)
	})
	kept("after the hub namespace's deletion began")

	if err := admin.Delete(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the MemberCluster and its namespace gone", func(ctx context.Context) error {
		if err := admin.Get(ctx, types.NamespacedName{Name: name}, &v1alpha1.MemberCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("MemberCluster: %v", err)
		}
		if err := admin.Get(ctx, types.NamespacedName{Name: hubNS}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s: %v", hubNS, err)
		}
		return nil
	})
	kept("after the MemberCluster was removed")
}

// TestIntentDeletedWithoutTheHubsMarkKeepsItsCopy: an intent deleted by
// hand (as the ClusterIntent CRD's deletion deletes every intent) is let
// go by the agent with the member's copy left running; the hub writes the
// intent again, and the copy is the same object throughout. Deleting the
// host object, which the hub marks the intent for, deletes the copy.
func TestIntentDeletedWithoutTheHubsMarkKeepsItsCopy(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	dep := testenv.MakeDeployment("kept", ns).Replicas(1).Obj()
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "kept", v1alpha1.PropagationOK)
	var before *appsv1.Deployment
	var first *v1alpha1.ClusterIntent
	testenv.Eventually(t, waitTimeout, "the copy and its intent", func(ctx context.Context) error {
		var err error
		if first, err = intentOf(ctx, ns, "kept"); err != nil {
			return err
		}
		before, err = memberDeployment(ctx, ns, "kept")
		return err
	})
	if err := admin.Delete(ctx, first, client.Preconditions{UID: &first.UID}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the intent let go by the agent and written again by the hub", func(ctx context.Context) error {
		ci, err := intentOf(ctx, ns, "kept")
		if err != nil {
			return err
		}
		if ci.UID == first.UID {
			return fmt.Errorf("the deleted intent is still there (deleting since %v, finalizers %v)", ci.DeletionTimestamp, ci.Finalizers)
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		copy, err := memberDeployment(ctx, ns, "kept")
		if err != nil {
			return fmt.Errorf("the member's copy: %w", err)
		}
		if copy.UID != before.UID || copy.DeletionTimestamp != nil {
			return fmt.Errorf("the member's copy has uid %s (was %s), deleting since %v; want it kept", copy.UID, before.UID, copy.DeletionTimestamp)
		}
		return nil
	})

	if err := admin.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitCopyAndIntentGone(t, ns, "kept")
}
