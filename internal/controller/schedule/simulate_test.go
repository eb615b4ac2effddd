package schedule

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/estimate"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// oneMember is a member "a" of 4 nodes of 2 cores.
type oneMember struct{ c *member.Capacity }

func (m oneMember) EstimateNodes(cluster string, f func(member.Nodes)) bool {
	if cluster != "a" {
		return false
	}
	f(m.c)
	return true
}

// A decision whose write fails gives its reservation back: the undo
// returns (it once called itself and blocked on the estimator's lock,
// which stopped every later decision) and the room is free again.
func TestUndoOfAFailedWrite(t *testing.T) {
	c := member.NewCapacity()
	for i := range 4 {
		c.SetNode(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	r := &Reconciler{Estimator: &estimate.Estimator{Members: oneMember{c}, Ledger: &ledger.Ledger{}}}
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	unit := func() *framework.Unit {
		return &framework.Unit{Key: "ns/web", Namespace: "ns", Name: "web", Replicas: ptr.To[int32](6), Shape: nodefit.NewShape(spec)}
	}
	clusters := []*v1alpha1.MemberCluster{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}

	sim := r.begin(unit(), false)
	sim.fill(clusters)
	undo := sim.reserve([]v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](6)}})
	done := make(chan struct{})
	go func() {
		undo()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("undo did not return within 10 s: it blocks on the estimator's lock")
	}
	// The next decision gets the lock and sees all 8 cores free again.
	next := unit()
	sim = r.begin(next, false)
	sim.fill(clusters)
	sim.release()
	if got := next.Fits["a"].Replicas; got != 8 {
		t.Errorf("after the undo, a fits %d 1-cpu replicas, want 8", got)
	}
}
