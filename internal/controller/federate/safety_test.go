package federate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/maintenance"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// propagatedDeployment creates a Deployment placed on the member by a
// PropagationPolicy of its namespace and waits until its copy is there.
func propagatedDeployment(t *testing.T, ns string) (*types.NamespacedName, types.NamespacedName) {
	t.Helper()
	ctx := context.Background()
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.PropagationSpec{ResourceSelectors: deploymentsIn(ns), Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}},
	}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, testenv.MakeDeployment("web", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	foKey := types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}
	waitForCluster(t, foKey, v1alpha1.PropagationOK)
	dep := types.NamespacedName{Namespace: ns, Name: "web"}
	return &dep, foKey
}

// annotate sets one annotation on the host Deployment.
func annotate(t *testing.T, key types.NamespacedName, name, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := testenv.MakeDeployment(key.Name, key.Namespace).Obj()
		if err := admin.Get(context.Background(), key, dep); err != nil {
			return err
		}
		if dep.Annotations == nil {
			dep.Annotations = map[string]string{}
		}
		dep.Annotations[name] = value
		return admin.Update(context.Background(), dep)
	})
	if err != nil {
		t.Fatalf("annotate %s: %v", key, err)
	}
}

// waitKept waits until the object is Unschedulable with its placement kept,
// then checks the placement and the member copy are still there.
func waitKept(t *testing.T, foKey types.NamespacedName) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "Scheduled=False/Unschedulable keeping the placement", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
		if c == nil || c.Reason != "Unschedulable" || !strings.Contains(c.Message, "keeping the current placement") {
			return fmt.Errorf("Scheduled condition %+v", c)
		}
		if len(fo.Placement()) != 1 || fo.Placement()[0].Cluster != memberName {
			return fmt.Errorf("placement %+v, want it kept on %s", fo.Placement(), memberName)
		}
		return nil
	})
	// The propagate pass after the decision still holds the copy.
	st := waitForCluster(t, foKey, v1alpha1.PropagationOK)
	if _, err := env.Cluster(memberName).Client.AppsV1().Deployments(foKey.Namespace).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("member copy after the placement was kept (%+v): %v", st, err)
	}
}

// waitCopyGone waits until the member's copy is deleted.
func waitCopyGone(t *testing.T, ns string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "the member copy deleted", func(ctx context.Context) error {
		_, err := env.Cluster(memberName).Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("member Deployment %s/web: %v", ns, err)
	})
}

// TestClusterNamesTypoKeepsCopies: a typo in flotilla.io/cluster-names
// leaves no cluster for the object. The placement and the member copy stay
// (before, the placement was emptied and the copy deleted); only
// flotilla.io/empty-placement: allow lets the copy go.
func TestClusterNamesTypoKeepsCopies(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	dep, foKey := propagatedDeployment(t, ns)

	annotate(t, *dep, v1alpha1.AnnotationClusterNames, "membr-1")
	waitKept(t, foKey)

	annotate(t, *dep, v1alpha1.AnnotationEmptyPlacement, "allow")
	waitCopyGone(t, ns)
}

// TestDrainingTheOnlyClusterKeepsCopies: drain refuses to start on the
// only member; its taint set anyway leaves the objects nowhere to go, so
// they keep running there and the wait stops naming them. The taint drain
// --force sets lets them go.
func TestDrainingTheOnlyClusterKeepsCopies(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	_, foKey := propagatedDeployment(t, ns)
	ctx := context.Background()
	member := maintenance.Cluster{Client: admin, Name: memberName}

	if _, err := member.CheckDrain(ctx, false); err == nil || !strings.Contains(err.Error(), "refusing to drain") {
		t.Fatalf("CheckDrain of the only member: %v, want a refusal", err)
	}
	if _, _, err := member.Drain(ctx, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := member.Uncordon(context.Background()); err != nil {
			t.Errorf("uncordon: %v", err)
		}
	})
	waitKept(t, foKey)
	err := member.WaitDrained(ctx, maintenance.WaitOptions{Timeout: time.Minute, Interval: 200 * time.Millisecond})
	if !errors.Is(err, maintenance.ErrStranded) || !strings.Contains(err.Error(), foKey.Namespace+"/"+foKey.Name) {
		t.Fatalf("waiting for the drain: %v, want the stranded object named", err)
	}

	// Other tests' objects may share the member: look for this one.
	only, err := member.CheckDrain(ctx, true)
	if err != nil || !slices.ContainsFunc(only, func(o maintenance.Object) bool { return o.Namespace == foKey.Namespace && o.Name == foKey.Name }) {
		t.Fatalf("forced CheckDrain: %v, %v; want %s listed", only, err, foKey)
	}
	if _, _, err := member.Drain(ctx, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	waitCopyGone(t, ns)
	testenv.Eventually(t, time.Minute, foKey.String()+" off "+memberName, func(ctx context.Context) error {
		var list v1alpha1.FederatedObjectList
		if err := admin.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if left := maintenance.Remaining(list.Items, memberName); len(left) > 0 {
			return fmt.Errorf("still on the member: %v", left)
		}
		return nil
	})

	// A plain drain afterwards takes the force away and says so.
	changed, unforced, err := member.Drain(ctx, time.Now(), false)
	if err != nil || !changed || !unforced {
		t.Fatalf("plain drain after a forced one: changed %v, unforced %v, err %v; want both true", changed, unforced, err)
	}
	mc := &v1alpha1.MemberCluster{}
	if err := admin.Get(ctx, client.ObjectKey{Name: memberName}, mc); err != nil {
		t.Fatal(err)
	}
	for _, taint := range mc.Spec.Taints {
		if taint.Key == v1alpha1.TaintDraining && taint.Value != "" {
			t.Errorf("drain taint after a plain drain: %+v, want no value", taint)
		}
	}
}

func updateMember(t *testing.T, change func(*v1alpha1.MemberCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &v1alpha1.MemberCluster{}
		if err := admin.Get(context.Background(), client.ObjectKey{Name: memberName}, mc); err != nil {
			return err
		}
		change(mc)
		return admin.Update(context.Background(), mc)
	})
	if err != nil {
		t.Fatalf("update MemberCluster %s: %v", memberName, err)
	}
}
