package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// rollingDeployment is a Deployment of replicas pods that turn Ready
// readyDelay after they start, rolling with maxSurge/maxUnavailable.
func rollingDeployment(name, ns string, replicas int32, surge, unavailable int, readyDelay string) *appsv1.Deployment {
	d := testenv.MakeDeployment(name, ns).Replicas(replicas).Obj()
	s, u := intstr.FromInt(surge), intstr.FromInt(unavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	d.Spec.Template.Annotations = map[string]string{localenv.AnnotationPodReadyDelay: readyDelay}
	return d
}

// waitRolledOut waits until the host Deployment reports what kubectl
// rollout status waits for: its generation observed and every replica
// updated and available, with no old one left.
func waitRolledOut(t *testing.T, key types.NamespacedName, replicas int32) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("Deployment %s rolled out on the host", key), func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return fmt.Errorf("generation %d, status %+v", d.Generation, s)
		}
		return nil
	})
}

// rolledOut waits for the FederatedObject's RolledOut condition.
func rolledOut(t *testing.T, foKey types.NamespacedName) *v1alpha1.FederatedObject {
	t.Helper()
	fo := &v1alpha1.FederatedObject{}
	testenv.Eventually(t, waitTimeout, "RolledOut=True on "+foKey.String(), func(ctx context.Context) error {
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionRolledOut); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("RolledOut %+v, rollout %+v", c, fo.Status.Rollout)
		}
		return nil
	})
	return fo
}

func memberClients() map[string]kubernetes.Interface {
	out := map[string]kubernetes.Interface{}
	for _, m := range env.Members {
		out[m.Name] = m.Client
	}
	return out
}

// TestGlobalBudget: a 30-replica Deployment divided 10/10/10 with
// maxSurge 3 and maxUnavailable 3 is updated; at no moment do the members
// together run more than 33 pods or fewer than 27 ready ones, the host
// status reports the rollout done only when every member is, and the
// FederatedObject's RolledOut condition follows.
func TestGlobalBudget(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	foKey := types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}
	if err := admin.Create(ctx, rollingDeployment("web", ns, 30, 3, 3, "1s")); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 30)
	first := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, foKey, first); err != nil {
		t.Fatal(err)
	}
	if first.Status.Rollout != nil {
		t.Errorf("creating wrote a rollout plan %+v; want none until the first template change", first.Status.Rollout)
	}

	census := testenv.WatchPods(t, memberClients(), ns, "app=web")
	if pods, ready := census.Now(); pods != 30 || ready != 30 {
		t.Fatalf("before the update: %d pods, %d ready; want 30 and 30", pods, ready)
	}
	start := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "example.com/web:2"
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	sawShare := false
	testenv.Eventually(t, 3*time.Minute, "the update rolled out on the host", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err == nil && fo.Status.Rollout != nil {
			for _, c := range fo.Status.Rollout.Clusters {
				sawShare = sawShare || c.State == v1alpha1.RolloutRolling && c.MaxSurge+c.MaxUnavailable > 0
			}
		}
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != 30 || s.AvailableReplicas != 30 || s.Replicas != 30 {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
	took := time.Since(start)
	_, minReady := census.Worst()
	t.Logf("federated rollout of 30 replicas over 3 members (surge 3, unavailable 3, pods Ready after 1 s): %s; %s", took.Round(100*time.Millisecond), census)
	if census.MostAsked() > 33 || minReady < 27 {
		t.Errorf("the budget was exceeded: %s; want at most 33 pods and at least 27 ready", census)
	}
	if !sawShare {
		t.Error("no cluster was seen rolling with a share of the budget")
	}
	for _, m := range env.Members {
		d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Paused || d.Spec.Template.Spec.Containers[0].Image != "example.com/web:2" || d.Status.UpdatedReplicas != 10 {
			t.Errorf("%s: paused %v, image %s, %d updated; want unpaused, example.com/web:2, 10", m.Name, d.Spec.Paused, d.Spec.Template.Spec.Containers[0].Image, d.Status.UpdatedReplicas)
		}
	}
	fo := rolledOut(t, foKey)
	if r := fo.Status.Rollout; len(r.Clusters) != 3 || r.MaxSurge != 3 || r.MaxUnavailable != 3 || r.Revision == "" {
		t.Errorf("rollout status %+v, want 3 clusters, a budget of 3/3 and the revision", r)
	}
}

// TestOneUnavailableAtATime: with maxUnavailable 1 and maxSurge 0, the
// members roll one after the other; never more than one replica of the
// federation is unavailable and never is one above the total.
func TestOneUnavailableAtATime(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	key := types.NamespacedName{Namespace: ns, Name: "db"}
	if err := admin.Create(ctx, rollingDeployment("db", ns, 6, 0, 1, "500ms")); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 6)
	census := testenv.WatchPods(t, memberClients(), ns, "app=db")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "example.com/db:2"
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 6)
	if _, minReady := census.Worst(); census.MostAsked() > 6 || minReady < 5 {
		t.Errorf("budget 0/1 exceeded: %s; want at most 6 pods and at least 5 ready", census)
	}
}
