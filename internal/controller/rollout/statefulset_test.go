package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestStatefulSetOneAtATime: a 9-replica StatefulSet divided 3/3/3 with
// the default budget (maxUnavailable 1) is updated; the members roll one
// after the other, each held by its partition until admitted, so never
// more than one of the federation's pods is unavailable (three members
// rolling on their own would take three down at once), and every member
// ends on the new template.
func TestStatefulSetOneAtATime(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	p := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "divide-sts"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns}},
			Placement: v1alpha1.Placement{
				ClusterNames:      []string{"member-1", "member-2", "member-3"},
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide},
			},
		},
	}
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	dep := testenv.MakeDeployment("db", ns).Obj()
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](9), ServiceName: "db", Selector: dep.Spec.Selector, Template: dep.Spec.Template,
			PodManagementPolicy: appsv1.ParallelPodManagement},
	}
	sts.Spec.Template.Annotations = map[string]string{localenv.AnnotationPodReadyDelay: "1s"}
	if err := admin.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "db"}
	onImage := func(image string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			for _, m := range env.Members {
				s, err := m.Client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("%s: %w", m.Name, err)
				}
				st := s.Status
				if s.Spec.Template.Spec.Containers[0].Image != image || st.ObservedGeneration < s.Generation || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 || st.CurrentRevision != st.UpdateRevision {
					return fmt.Errorf("%s: image %s, status %+v", m.Name, s.Spec.Template.Spec.Containers[0].Image, st)
				}
			}
			return nil
		}
	}
	first := dep.Spec.Template.Spec.Containers[0].Image
	testenv.Eventually(t, waitTimeout, "3 ready pods of db in every member", onImage(first))
	census := testenv.WatchPods(t, memberClients(), ns, "app="+dep.Spec.Template.Labels["app"])
	if pods, ready := census.Now(); pods != 9 || ready != 9 {
		t.Fatalf("before the update: %d pods, %d ready; want 9 and 9", pods, ready)
	}
	start := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &appsv1.StatefulSet{}
		if err := admin.Get(ctx, key, s); err != nil {
			return err
		}
		s.Spec.Template.Spec.Containers[0].Image = "example.com/db:2"
		return admin.Update(ctx, s)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*time.Minute, "every member on the new template", onImage("example.com/db:2"))
	took := time.Since(start)
	testenv.Eventually(t, waitTimeout, "the host's status done as kubectl rollout status reads it", func(ctx context.Context) error {
		s := &appsv1.StatefulSet{}
		if err := admin.Get(ctx, key, s); err != nil {
			return err
		}
		st := s.Status
		if st.ObservedGeneration < s.Generation || st.UpdatedReplicas != 9 || st.ReadyReplicas != 9 || st.CurrentRevision != st.UpdateRevision {
			return fmt.Errorf("generation %d, status %+v", s.Generation, st)
		}
		return nil
	})
	fo := rolledOut(t, types.NamespacedName{Namespace: ns, Name: "db.statefulset.apps"})
	_, minReady := census.Worst()
	t.Logf("federated StatefulSet rollout of 9 replicas over 3 members (maxUnavailable 1, pods Ready after 1 s): %s; %s", took.Round(100*time.Millisecond), census)
	if minReady < 8 {
		t.Errorf("more than one pod of the federation unavailable at once: %s", census)
	}
	if r := fo.Status.Rollout; r == nil || len(r.Clusters) != 3 || r.MaxUnavailable != 1 || r.MaxSurge != 0 {
		t.Errorf("rollout status %+v, want 3 clusters and a budget of 0/1", r)
	}
	for _, m := range env.Members {
		s, err := m.Client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ptr.Deref(ru.Partition, 0) != 0 || s.Annotations[v1alpha1.AnnotationHeld] != "" {
			t.Errorf("%s: still held after the rollout: %+v, annotations %v", m.Name, s.Spec.UpdateStrategy, s.Annotations)
		}
	}
}
