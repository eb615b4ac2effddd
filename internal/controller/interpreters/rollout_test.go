package interpreters_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// playCloneSets plays the CloneSet controller of a member (the members run
// no controllers): every copy of ns reports its status at the current
// generation, and rolls to a new template as a CloneSet does: while not
// paused, up to its maxUnavailable replicas at a time go down and come
// back updated. It runs until ctx ends.
func playCloneSets(ctx context.Context, m *testenv.Cluster, ns string) {
	// The template each copy's updated replicas run, by name.
	revisions := map[string]string{}
	for ctx.Err() == nil {
		list, err := m.Dynamic.Resource(cloneSets).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				stepCloneSet(ctx, m, &list.Items[i], revisions)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stepCloneSet moves one copy one step.
func stepCloneSet(ctx context.Context, m *testenv.Cluster, u *unstructured.Unstructured, revisions map[string]string) {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	paused, _, _ := unstructured.NestedBool(u.Object, "spec", "updateStrategy", "paused")
	// An integer is a share Flotilla wrote; the template's percentage
	// (or nothing) would let this player take every pod down at once, so
	// a share not written shows as too many unavailable.
	maxU, found, _ := unstructured.NestedInt64(u.Object, "spec", "updateStrategy", "maxUnavailable")
	if !found {
		maxU = n
	}
	image, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	revision := fmt.Sprint(image)
	st, _ := u.Object["status"].(map[string]any)
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	switch {
	case st == nil:
		updated, available = n, n // the first pods run the first template
	case revisions[u.GetName()] != revision:
		updated = 0 // a new template: every pod runs the old one
	case available < n:
		available = n // the last batch is back, on the new template
	case !paused && updated < n:
		k := min(maxU, n-updated)
		available -= k // k old pods go down; they come back updated
		updated += k
	}
	revisions[u.GetName()] = revision
	updated, available = min(updated, n), min(available, n)
	u.Object["status"] = map[string]any{
		"observedGeneration": u.GetGeneration(), "replicas": n, "readyReplicas": available, "availableReplicas": available,
		"updatedReplicas": updated, "updatedReadyReplicas": min(updated, available), "labelSelector": "app=" + u.GetName(),
	}
	_, _ = m.Dynamic.Resource(cloneSets).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
}

// TestCloneSetFederatedRollout rolls a new template out to a CloneSet
// divided 6/4 over both members under the shipped interpreter's rollout
// rule: the federation's maxUnavailable of 10% (1 of 10) holds across the
// members (a
// census of both members' unavailable replicas every 50 ms never sees
// more), so one copy rolls while the other waits its turn held with its
// update strategy paused, and the rollout completes with RolledOut=True.
func TestCloneSetFederatedRollout(t *testing.T) {
	c := startControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)
	wi := shippedCloneSet(t)
	if err := c.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), wi) })
	waitReady(t, wi.Name, metav1.ConditionTrue, "TypeChecked")
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, m := range env.Members {
		wg.Go(func() { playCloneSets(ctx, m, ns) })
	}
	policy := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "clonesets", Namespace: ns},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"}},
			Placement: v1alpha1.Placement{
				ClusterNames: []string{env.Members[0].Name, env.Members[1].Name},
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide,
					Weights: []v1alpha1.ClusterWeight{{Cluster: env.Members[0].Name, Weight: 3}, {Cluster: env.Members[1].Name, Weight: 2}}},
			},
		},
	}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	cs := cloneSet(ns, "roll", 10, "roll-config")
	if err := unstructured.SetNestedField(cs.Object, map[string]any{"maxUnavailable": "10%", "maxSurge": int64(0)}, "spec", "updateStrategy"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "6/4 copies all available", func(ctx context.Context) error {
		return census(ctx, ns, "roll", map[string]int64{env.Members[0].Name: 6, env.Members[1].Name: 4}, false)
	})

	// Watch every member's unavailable replicas and held copies while the
	// template changes.
	var mu sync.Mutex
	worst, held := int64(0), false
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			var down int64
			for _, m := range env.Members {
				u, err := m.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, "roll", metav1.GetOptions{})
				if err != nil {
					continue
				}
				n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
				a, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
				down += max(n-a, 0)
				if p, _, _ := unstructured.NestedBool(u.Object, "spec", "updateStrategy", "paused"); p && u.GetAnnotations()[v1alpha1.AnnotationHeld] == "true" {
					mu.Lock()
					held = true
					mu.Unlock()
				}
			}
			mu.Lock()
			worst = max(worst, down)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`)
	if _, err := env.Host.Dynamic.Resource(cloneSets).Namespace(ns).Patch(ctx, "roll", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	testenv.Eventually(t, waitTimeout, "every copy on the new template, available, not paused", func(ctx context.Context) error {
		return census(ctx, ns, "roll", map[string]int64{env.Members[0].Name: 6, env.Members[1].Name: 4}, true)
	})
	testenv.Eventually(t, waitTimeout, "RolledOut=True", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "roll.cloneset.apps.kruise.io"}, fo); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionRolledOut); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("RolledOut %+v", cond)
		}
		return nil
	})
	close(stop)
	watch.Wait()
	t.Logf("rolled out in %s; at most %d replicas unavailable across the members; a copy was held: %t", time.Since(started).Round(time.Second), worst, held)
	if worst > 1 {
		t.Errorf("%d replicas unavailable at once across the members; the federation's maxUnavailable is 1", worst)
	}
	if !held {
		t.Error("no copy was seen held (paused, flotilla.io/held) while another rolled")
	}
}

// census checks each member's copy: its replicas, all available, and with
// updated set, all updated (the new image) and not paused.
func census(ctx context.Context, ns, name string, want map[string]int64, updated bool) error {
	for _, m := range env.Members {
		u, err := m.Dynamic.Resource(cloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		a, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
		up, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		paused, _, _ := unstructured.NestedBool(u.Object, "spec", "updateStrategy", "paused")
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		switch {
		case n != want[m.Name] || a != n:
			return fmt.Errorf("%s: %d replicas, %d available", m.Name, n, a)
		case updated && (up != n || paused || !containsImage(containers, "nginx:2")):
			return fmt.Errorf("%s: %d of %d updated, paused %t, containers %v", m.Name, up, n, paused, containers)
		}
	}
	return nil
}

func containsImage(containers []any, image string) bool {
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["image"] == image {
			return true
		}
	}
	return false
}
