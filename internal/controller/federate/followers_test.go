package federate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestFollowerStaysWithAnOrphanedWorkload: a ConfigMap two workloads
// reference, one on each member, stays on the member of the one whose
// policy is deleted (its copies are orphaned and keep running), and still
// follows the other. Before, the ConfigMap followed only the workload
// still propagated, and its copy was deleted under the orphaned pods.
func TestFollowerStaysWithAnOrphanedWorkload(t *testing.T) {
	startControlPlane(t)
	joinSecondMember(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	usesCfg := func(name string) *appsv1.Deployment {
		d := testenv.MakeDeployment(name, ns).Obj()
		d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}}}
		return d
	}
	policy := func(name, workload, cluster string) *v1alpha1.PropagationPolicy {
		return &v1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.PropagationSpec{
				ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: workload}},
				Placement:         v1alpha1.Placement{ClusterNames: []string{cluster}},
			},
		}
	}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"mode": "fast"}},
		policy("orphaned", "orphaned", memberName), policy("kept", "kept", secondMember),
		usesCfg("orphaned"), usesCfg("kept"),
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	members := map[string]string{memberName: "orphaned", secondMember: "kept"}
	testenv.Eventually(t, time.Minute, "each workload and the ConfigMap in both members", func(ctx context.Context) error {
		for m, d := range members {
			c := env.Cluster(m).Client
			if _, err := c.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		}
		return nil
	})
	cfgInMember1, err := env.Cluster(memberName).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The policy of "orphaned" goes: it is released, its copy kept.
	if err := admin.Delete(ctx, policy("orphaned", "orphaned", memberName)); err != nil {
		t.Fatal(err)
	}
	cfgKey := types.NamespacedName{Namespace: ns, Name: "cfg.configmap"}
	testenv.Eventually(t, time.Minute, "the orphaned workload released, and the ConfigMap kept for it", func(ctx context.Context) error {
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphaned.deployment.apps"}, &v1alpha1.FederatedObject{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("FederatedObject of orphaned: %v", err)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, cfgKey, fo); err != nil {
			return err
		}
		if kept := fedobj.KeptForOrphans(fo); !slices.Equal(kept, []string{memberName}) {
			return fmt.Errorf("kept for orphans %v, want [%s]", kept, memberName)
		}
		return nil
	})
	// Nothing to wait for if all is well: the ConfigMap must stay, so it
	// is watched for a while (its placement is decided again meanwhile).
	testenv.Consistently(t, 10*time.Second, func() error {
		got, err := env.Cluster(memberName).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
		if err != nil || got.UID != cfgInMember1.UID || got.DeletionTimestamp != nil {
			return fmt.Errorf("the ConfigMap in %s beside the orphaned workload: %v, want it kept", memberName, err)
		}
		if _, err := env.Cluster(memberName).Client.AppsV1().Deployments(ns).Get(ctx, "orphaned", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("the orphaned workload's copy: %v, want it kept", err)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, cfgKey, fo); err != nil {
			return err
		}
		if names := clusterNames(fo.Placement()); !slices.Equal(names, []string{memberName, secondMember}) {
			return fmt.Errorf("the ConfigMap placed on %v, want both members", names)
		}
		return nil
	})
}

func clusterNames(p []v1alpha1.ClusterPlacement) []string {
	var out []string
	for _, c := range p {
		out = append(out, c.Cluster)
	}
	slices.Sort(out)
	return out
}

// TestObjectBecomingAFollowerKeepsItsCopies: a ConfigMap a policy placed
// on both members, and that a workload on one member references, keeps
// its copy on the other member when the policy stops selecting it: it
// turns into the workload's follower, and an object no policy selects any
// more keeps its copies (docs/security.md). Before, the follower placement
// (the workload's member only) deleted the other copy.
func TestObjectBecomingAFollowerKeepsItsCopies(t *testing.T) {
	startControlPlane(t)
	joinSecondMember(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	web := testenv.MakeDeployment("web", ns).Obj()
	web.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}}}
	cfgPolicy := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}},
			Placement:         v1alpha1.Placement{ClusterNames: []string{memberName, secondMember}},
		},
	}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"mode": "fast"}},
		cfgPolicy,
		&v1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: v1alpha1.PropagationSpec{
				ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
				Placement:         v1alpha1.Placement{ClusterNames: []string{memberName}},
			},
		},
		web,
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, time.Minute, "the ConfigMap in both members, the workload in the first", func(ctx context.Context) error {
		for _, m := range []string{memberName, secondMember} {
			if _, err := env.Cluster(m).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		}
		_, err := env.Cluster(memberName).Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err
	})
	cfgInSecond, err := env.Cluster(secondMember).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := admin.Delete(ctx, cfgPolicy); err != nil {
		t.Fatal(err)
	}
	cfgKey := types.NamespacedName{Namespace: ns, Name: "cfg.configmap"}
	testenv.Eventually(t, time.Minute, "the ConfigMap a follower", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, cfgKey, fo); err != nil {
			return err
		}
		if fo.Spec.Policy != nil {
			return fmt.Errorf("still placed by %v", fo.Spec.Policy)
		}
		return nil
	})
	testenv.Consistently(t, 10*time.Second, func() error {
		got, err := env.Cluster(secondMember).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
		if err != nil || got.UID != cfgInSecond.UID || got.DeletionTimestamp != nil {
			return fmt.Errorf("the ConfigMap in %s, where its policy put it: %v, want it kept", secondMember, err)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, cfgKey, fo); err != nil {
			return err
		}
		if names := clusterNames(fo.Placement()); !slices.Equal(names, []string{memberName, secondMember}) {
			return fmt.Errorf("the ConfigMap placed on %v, want both members", names)
		}
		return nil
	})
	fo := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, cfgKey, fo); err != nil {
		t.Fatal(err)
	}
	if kept := fedobj.KeptForOrphans(fo); !slices.Equal(kept, []string{memberName, secondMember}) {
		t.Fatalf("kept for orphans %v, want both members", kept)
	}

	// A policy selecting it again decides alone: what it kept as a
	// follower is forgotten, so that it cannot come back should the
	// object turn into a follower once more.
	cfgPolicy = cfgPolicy.DeepCopy()
	cfgPolicy.ResourceVersion = ""
	cfgPolicy.Spec.Placement.ClusterNames = []string{secondMember}
	if err := admin.Create(ctx, cfgPolicy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the ConfigMap placed by its policy again, keeping nothing for orphans", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, cfgKey, fo); err != nil {
			return err
		}
		if fo.Spec.Policy == nil || fo.Spec.Policy.Name != cfgPolicy.Name {
			return fmt.Errorf("placed by %v", fo.Spec.Policy)
		}
		if kept := fedobj.KeptForOrphans(fo); len(kept) > 0 {
			return fmt.Errorf("still keeps %v for orphans", kept)
		}
		return nil
	})
}
