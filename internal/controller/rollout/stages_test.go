package rollout_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/rolloutctl"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// stagedPolicy divides the namespace's Deployments over the three members
// and rolls them out canary (member-1) first, then the others, with
// stages.
func stagedPolicy(t *testing.T, ns string, stages ...v1alpha1.RolloutStage) {
	t.Helper()
	p := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staged"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}},
			Placement: v1alpha1.Placement{
				ClusterNames:      []string{"member-1", "member-2", "member-3"},
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide},
			},
			Rollout: &v1alpha1.RolloutPolicy{Stages: stages},
		},
	}
	if err := admin.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// waitRolloutReason waits for the RolledOut condition's reason and
// returns the FederatedObject.
func waitRolloutReason(t *testing.T, foKey types.NamespacedName, reason string) *v1alpha1.FederatedObject {
	t.Helper()
	fo := &v1alpha1.FederatedObject{}
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("RolledOut reason %s on %s", reason, foKey), func(ctx context.Context) error {
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionRolledOut); c == nil || c.Reason != reason {
			return fmt.Errorf("RolledOut %+v", c)
		}
		return nil
	})
	return fo
}

// podImages returns the images of the ready and unready pods of app in
// each member, as "member-1=img:ready,img:unready".
func podImages(ctx context.Context, ns, app string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range env.Members {
		pods, err := m.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		var imgs []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			img := p.Spec.Containers[0].Image
			if !seen[img] {
				seen[img] = true
				imgs = append(imgs, img)
			}
		}
		out[m.Name] = strings.Join(imgs, ",")
	}
	return out, nil
}

// TestStagedRollout: with a canary stage (member-1) gated by approval, a
// template change rolls out in member-1 and stops; the other members keep
// their old pods until `flotilla rollout approve`. A template whose pods
// never become Ready halts the rollout in the canary (its progress
// deadline) and leaves the later stages on the old template; `flotilla
// rollout abort` goes back to the previous revision everywhere.
func TestStagedRollout(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	stagedPolicy(t, ns, v1alpha1.RolloutStage{Name: "canary", ClusterNames: []string{"member-1"}, After: v1alpha1.GateApproval})
	key := types.NamespacedName{Namespace: ns, Name: "shop"}
	foKey := types.NamespacedName{Namespace: ns, Name: "shop.deployment.apps"}
	d := rollingDeployment("shop", ns, 6, 1, 1, "200ms")
	d.Labels["app"], d.Spec.Selector.MatchLabels["app"], d.Spec.Template.Labels["app"] = "shop", "shop", "shop"
	d.Spec.Template.Spec.Containers[0].Image = "example.com/shop:1"
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(10))
	if err := admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 6)
	ctl := rolloutctl.Workload{Client: admin, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Key: key}
	if _, err := ctl.Approve(ctx, ""); err == nil {
		t.Error("approve with no gate waiting: no error")
	}

	setImage(t, key, "example.com/shop:2")
	fo := waitRolloutReason(t, foKey, "AwaitingApproval")
	if fo.Status.Rollout.Stage != "canary" || fo.Status.Rollout.Gate != v1alpha1.GateApproval {
		t.Errorf("rollout at stage %q gate %q, want canary/Approval", fo.Status.Rollout.Stage, fo.Status.Rollout.Gate)
	}
	images, err := podImages(ctx, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"member-1": "example.com/shop:2", "member-2": "example.com/shop:1", "member-3": "example.com/shop:1"}; fmt.Sprint(images) != fmt.Sprint(want) {
		t.Errorf("pods at the approval gate: %v, want %v", images, want)
	}
	if msg, err := ctl.Approve(ctx, ""); err != nil || !strings.Contains(msg, "approved after stage canary") {
		t.Fatalf("approve: %q, %v", msg, err)
	}
	waitRolloutReason(t, foKey, "RolledOut")
	waitRolledOut(t, key, 6)

	// A template whose pods never become Ready halts in the canary.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "example.com/shop:broken"
		d.Spec.Template.Annotations[localenv.AnnotationPodReadyDelay] = "1h"
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	fo = waitRolloutReason(t, foKey, "Halted")
	if !strings.Contains(fo.Status.Rollout.Halted, "member-1 exceeded its progress deadline") {
		t.Errorf("halted: %q, want member-1's progress deadline", fo.Status.Rollout.Halted)
	}
	if images, err = podImages(ctx, ns, "shop"); err != nil {
		t.Fatal(err)
	}
	if images["member-2"] != "example.com/shop:2" || images["member-3"] != "example.com/shop:2" {
		t.Errorf("later stages after the halt: %v, want member-2 and member-3 on example.com/shop:2 only", images)
	}
	if msg, err := ctl.Abort(ctx); err != nil || !strings.Contains(msg, "rolled back") {
		t.Fatalf("abort: %q, %v", msg, err)
	}
	waitRolledOut(t, key, 6)
	testenv.Eventually(t, waitTimeout, "every pod back on example.com/shop:2", func(ctx context.Context) error {
		images, err := podImages(ctx, ns, "shop")
		if err != nil {
			return err
		}
		for m, img := range images {
			if img != "example.com/shop:2" {
				return fmt.Errorf("%s: %s", m, img)
			}
		}
		return nil
	})
	waitRolloutReason(t, foKey, "RolledOut")
}

// TestStagesBadInput: stages the API refuses (no clusters; a pause
// without its seconds; an unknown gate), and a stage naming a cluster that
// does not exist, which stops the rollout with InvalidStages.
func TestStagesBadInput(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for _, tt := range []struct {
		stage v1alpha1.RolloutStage
		want  string
	}{
		{v1alpha1.RolloutStage{Name: "empty"}, "clusterNames or a labelSelector"},
		{v1alpha1.RolloutStage{Name: "pause", ClusterNames: []string{"member-1"}, After: v1alpha1.GatePause}, "pauseSeconds is set exactly when after is Pause"},
		{v1alpha1.RolloutStage{Name: "gate", ClusterNames: []string{"member-1"}, After: "Wait"}, "Unsupported value"},
		{v1alpha1.RolloutStage{Name: "Bad_Name", ClusterNames: []string{"member-1"}}, "spec.rollout.stages[0].name"},
	} {
		p := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec: v1alpha1.PropagationSpec{Rollout: &v1alpha1.RolloutPolicy{Stages: []v1alpha1.RolloutStage{tt.stage}}}}
		err := admin.Create(ctx, p)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("stage %+v: %v, want Invalid mentioning %q", tt.stage, err, tt.want)
		}
	}

	// A budget of 0/0 is refused by the host apiserver itself.
	zero := rollingDeployment("zero", ns, 3, 0, 0, "0s")
	if err := admin.Create(ctx, zero); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "maxUnavailable") {
		t.Errorf("a Deployment with maxSurge 0 and maxUnavailable 0: %v, want Invalid naming maxUnavailable", err)
	}

	stagedPolicy(t, ns, v1alpha1.RolloutStage{Name: "canary", ClusterNames: []string{"member-9"}})
	if err := admin.Create(ctx, rollingDeployment("web", ns, 3, 1, 1, "0s")); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	waitRolledOut(t, key, 3) // creating copies is no rollout
	fo := waitRolloutReason(t, types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}, "InvalidStages")
	if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionRolledOut); !strings.Contains(c.Message, "member-9") {
		t.Errorf("InvalidStages message %q does not name member-9", c.Message)
	}
	// A template change is held in every member until the stages are
	// fixed.
	setImage(t, key, "example.com/web:2")
	testenv.Eventually(t, waitTimeout, "the change held in every member", func(ctx context.Context) error {
		got, err := memberImages(ctx, ns, "web")
		if err != nil {
			return err
		}
		if want := "member-1=example.com/web:2/true/0 member-2=example.com/web:2/true/0 member-3=example.com/web:2/true/0"; got != want {
			return fmt.Errorf("members %s, want %s", got, want)
		}
		return nil
	})
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &v1alpha1.PropagationPolicy{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "staged"}, p); err != nil {
			return err
		}
		p.Spec.Rollout.Stages[0].ClusterNames = []string{"member-1"}
		return admin.Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 3)
	waitRolloutReason(t, types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}, "RolledOut")
}

// TestResumeAfterSuspensionRollsWithinBudget: while the object is
// suspended, every member's copy is changed by hand; on resuming, the
// federation's template comes back one cluster at a time within the
// budget (maxUnavailable 1, maxSurge 0), not everywhere at once.
func TestResumeAfterSuspensionRollsWithinBudget(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	key := types.NamespacedName{Namespace: ns, Name: "cart"}
	foKey := types.NamespacedName{Namespace: ns, Name: "cart.deployment.apps"}
	d := rollingDeployment("cart", ns, 6, 0, 1, "300ms")
	d.Labels["app"], d.Spec.Selector.MatchLabels["app"], d.Spec.Template.Labels["app"] = "cart", "cart", "cart"
	d.Spec.Template.Spec.Containers[0].Image = "example.com/cart:1"
	if err := admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 6)

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, v1alpha1.AnnotationSuspend, "true")
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	waitRolloutReason(t, foKey, "Suspended")
	for _, m := range env.Members {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "cart", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Image = "example.com/cart:hotfix"
			_, err = m.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, waitTimeout, "every member runs the hand-made fix, all pods ready", func(ctx context.Context) error {
		images, err := podImages(ctx, ns, "cart")
		if err != nil {
			return err
		}
		for m, img := range images {
			if img != "example.com/cart:hotfix" {
				return fmt.Errorf("%s runs %s", m, img)
			}
		}
		for _, m := range env.Members {
			d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "cart", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s := d.Status; s.ObservedGeneration < d.Generation || s.UpdatedReplicas != *d.Spec.Replicas || s.AvailableReplicas != *d.Spec.Replicas || s.Replicas != *d.Spec.Replicas {
				return fmt.Errorf("%s: status %+v", m.Name, s)
			}
		}
		return nil
	})

	census := testenv.WatchPods(t, memberClients(), ns, "app=cart")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		delete(d.Annotations, v1alpha1.AnnotationSuspend)
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the federation's template back in every member", func(ctx context.Context) error {
		images, err := podImages(ctx, ns, "cart")
		if err != nil {
			return err
		}
		for m, img := range images {
			if img != "example.com/cart:1" {
				return fmt.Errorf("%s runs %s", m, img)
			}
		}
		return nil
	})
	waitRolledOut(t, key, 6)
	if _, minReady := census.Worst(); census.MostAsked() > 6 || minReady < 5 {
		t.Errorf("resuming rolled past the budget 0/1: %s; want at most 6 pods and at least 5 ready", census)
	}
}
