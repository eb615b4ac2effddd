package estimate

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

type members map[string]*member.Capacity

func (m members) EstimateNodes(cluster string, f func(member.Nodes)) bool {
	c, ok := m[cluster]
	if ok {
		f(c)
	}
	return ok
}

// nodes returns a member of n nodes with cores each, all free.
func nodes(n int, cores int64) *member.Capacity {
	c := member.NewCapacity()
	for i := range n {
		c.SetNode(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cores, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	return c
}

func unit(name string, replicas int32, cpu string) *framework.Unit {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
	return &framework.Unit{Key: "ns/" + name, GVK: appsv1.SchemeGroupVersion.WithKind("StatefulSet"), Namespace: "ns", Name: name, Replicas: ptr.To(replicas), Shape: nodefit.NewShape(spec)}
}

// boundPod is a pod of StatefulSet ns/owner bound to node with cpu
// requested.
func boundPod(owner, name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, Controller: ptr.To(true)}}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func clusters(names ...string) []*v1alpha1.MemberCluster {
	out := make([]*v1alpha1.MemberCluster, len(names))
	for i, n := range names {
		out[i] = &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: n}}
	}
	return out
}

func TestFillAndReserve(t *testing.T) {
	// small: 20 nodes of 1 core (20 cores); large: 2 nodes of 8 (16).
	m := members{"small": nodes(20, 1), "large": nodes(2, 8), "empty": nodes(0, 0)}
	e := &Estimator{Members: m, Ledger: &ledger.Ledger{}}
	cs := clusters("small", "large", "pull", "empty")

	big := unit("big", 10, "4")
	e.Fill(big, cs)
	if f := big.Fits["small"]; f.Replicas != 0 {
		t.Errorf("4-cpu pods on 1-cpu nodes: small fits %d, want 0", f.Replicas)
	}
	if f := big.Fits["large"]; f.Replicas != 4 {
		t.Errorf("large fits %d 4-cpu pods, want 4", f.Replicas)
	}
	if _, ok := big.Fits["pull"]; ok {
		t.Errorf("a member without a node-level view got a fit")
	}
	if _, ok := big.Fits["empty"]; ok {
		t.Errorf("a member without nodes got a fit")
	}
	why := Explain(big)
	for _, want := range []string{"small fits 0 of 10 (most free on one node: cpu 1)", "large fits 4 of 10 (most free on one node: cpu 8)"} {
		if !strings.Contains(why, want) {
			t.Errorf("Explain = %q, want it to say %q", why, want)
		}
	}
	// big takes 3 in large; a second decision sees one 4-cpu replica left.
	e.Reserve(big, []v1alpha1.ClusterPlacement{{Cluster: "large", Replicas: ptr.To[int32](3)}}, false)
	other := unit("other", 10, "4")
	e.Fill(other, cs)
	if f := other.Fits["large"]; f.Replicas != 1 || f.Reserved != 3 {
		t.Errorf("after big reserved 3, large fits %d (reserved %d), want 1 (3)", f.Replicas, f.Reserved)
	}
	// big's own reservation does not count against itself.
	e.Fill(big, cs)
	if f := big.Fits["large"]; f.Replicas != 4 {
		t.Errorf("big's own reservation counted against it: fits %d, want 4", f.Replicas)
	}
	// Its pods start: two bound in large count as its own and end that
	// much of the reservation.
	for i := range 2 {
		m["large"].SetPod(fmt.Sprintf("ns/big-%d", i), boundPod("big", fmt.Sprintf("big-%d", i), fmt.Sprintf("n%d", i), "4"))
	}
	e.Fill(big, cs)
	if f := big.Fits["large"]; f.Replicas != 4 || f.Bound != 2 {
		t.Errorf("with 2 bound, big fits %d in large (bound %d), want 4 (2)", f.Replicas, f.Bound)
	}
	e.Fill(other, cs)
	if f := other.Fits["large"]; f.Replicas != 1 || f.Reserved != 1 {
		t.Errorf("with 2 of big's 3 bound, other fits %d (reserved %d), want 1 (1)", f.Replicas, f.Reserved)
	}
	// big's object is deleted: its reservation ends.
	e.Forget(big.Key)
	e.Fill(other, cs)
	if f := other.Fits["large"]; f.Replicas != 2 || f.Reserved != 0 {
		t.Errorf("after big's object went, other fits %d (reserved %d), want 2 (0)", f.Replicas, f.Reserved)
	}
	// Objects without a pod template are not estimated.
	plain := &framework.Unit{Key: "ns/cm", Namespace: "ns", Name: "cm"}
	e.Fill(plain, cs)
	if plain.Fits != nil {
		t.Errorf("an object without a pod template got fits")
	}
}

// An object that is not divided runs its whole count in every cluster: a
// scale-up starts a reservation for the new replicas, although its
// placement (the clusters, no counts) stays the same.
func TestUndividedScaleUpIsReserved(t *testing.T) {
	m := members{"a": nodes(4, 2)}
	e := &Estimator{Members: m, Ledger: &ledger.Ledger{}}
	cs := clusters("a")
	everywhere := []v1alpha1.ClusterPlacement{{Cluster: "a"}}

	web := unit("web", 2, "1")
	e.Fill(web, cs)
	e.Reserve(web, everywhere, false)
	if got := reservedIn(e, "a"); got != 2 {
		t.Fatalf("first placement reserves %d, want 2", got)
	}
	// Scaled to 5: the placement in force is the same cluster list, and
	// Current's count (none: the whole count) reads as today's 5.
	web = unit("web", 5, "1")
	web.Current = everywhere
	e.Fill(web, cs)
	e.Reserve(web, everywhere, false)
	if got := reservedIn(e, "a"); got != 5 {
		t.Errorf("after scaling to 5, %d reserved, want 5", got)
	}
	// Deciding again at 5 keeps that reservation and its deadline.
	e.Fill(web, cs)
	e.Reserve(web, everywhere, false)
	if got := reservedIn(e, "a"); got != 5 {
		t.Errorf("an unchanged decision left %d reserved, want 5", got)
	}
}

// A decision made while a member's view is gone (its caches refilling)
// keeps what the ledger holds there; when the view is back, a workload
// never recorded there is restored once.
func TestMemberWithoutAViewKeepsItsReservations(t *testing.T) {
	m := members{"a": nodes(4, 2), "b": nodes(4, 2)}
	e := &Estimator{Members: m, Ledger: &ledger.Ledger{}}
	placed := []v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](3)}, {Cluster: "b", Replicas: ptr.To[int32](3)}}

	web := unit("web", 6, "1")
	e.Fill(web, clusters("a", "b"))
	e.Reserve(web, placed, false)
	web = unit("web", 6, "1")
	web.Current = placed
	decideWithoutAView(e, m, "b", web, placed) // b reconnects
	if got := reservedIn(e, "b"); got != 3 {
		t.Errorf("after a decision without b's view, b reserves %d, want the 3 from before", got)
	}

	// After a restart the ledger is empty and b has no view yet: a is
	// restored, b is not recorded...
	e = &Estimator{Members: members{"a": m["a"]}, Ledger: &ledger.Ledger{}}
	web = unit("web", 6, "1")
	web.Current = placed
	if !e.Unrestored(web) {
		t.Fatalf("a workload in force after a restart is not unrestored")
	}
	e.Restore(web)
	if e.Unrestored(web) {
		t.Errorf("restored where there is a view, the workload is still unrestored")
	}
	if web.Fits != nil {
		t.Errorf("Restore left fits on the unit")
	}
	// ... until b's view comes: then it is restored there too.
	e.Members = m
	if !e.Unrestored(web) {
		t.Fatalf("b's view came back: the workload should be unrestored there")
	}
	e.Restore(web)
	for _, c := range []string{"a", "b"} {
		if got := reservedIn(e, c); got != 3 {
			t.Errorf("after the restores %s reserves %d, want 3", c, got)
		}
	}
}

// A count changed while a member was out of view is reserved when the
// view returns; a placement read from before a decision that moved the
// object (a stale cache) restores nothing and ends nothing.
func TestRestoreAfterViewAndStaleReads(t *testing.T) {
	m := members{"a": nodes(4, 4), "b": nodes(4, 4), "c": nodes(4, 4)}
	e := &Estimator{Members: m, Ledger: &ledger.Ledger{}}
	both := []v1alpha1.ClusterPlacement{{Cluster: "a"}, {Cluster: "b"}}

	web := unit("web", 3, "1")
	e.Fill(web, clusters("a", "b"))
	e.Reserve(web, both, false)
	// b reconnects; meanwhile web is scaled to 10 (not divided: 10 each).
	web = unit("web", 10, "1")
	web.Current = both
	decideWithoutAView(e, m, "b", web, both)
	if got := reservedIn(e, "b"); got != 3 {
		t.Fatalf("b, out of view, reserves %d, want the 3 from before", got)
	}
	if !e.Unrestored(web) {
		t.Fatalf("b's view is back after a scale-up it missed: the workload should be unrestored there")
	}
	e.Restore(web)
	for _, c := range []string{"a", "b"} {
		if got := reservedIn(e, c); got != 10 {
			t.Errorf("after the restore %s reserves %d, want 10", c, got)
		}
	}

	// A decision moves web from a and b to c.
	moved := []v1alpha1.ClusterPlacement{{Cluster: "c"}}
	e.Fill(web, clusters("a", "b", "c"))
	e.Reserve(web, moved, false)
	// A reconcile reads the object from before that write.
	stale := unit("web", 10, "1")
	stale.Current = both
	if e.Unrestored(stale) {
		t.Errorf("a stale placement of clusters the last decision left reads as unrestored")
	}
	e.Restore(stale)
	if got := reservedIn(e, "c"); got != 10 {
		t.Errorf("after a restore from a stale read c reserves %d, want 10", got)
	}
	for _, c := range []string{"a", "b"} {
		if got := reservedIn(e, c); got != 0 {
			t.Errorf("after a restore from a stale read %s reserves %d, want 0", c, got)
		}
	}
}

// reservedIn is what other decisions hold in cluster, as a 1-cpu unit of
// another workload sees it.
func reservedIn(e *Estimator, cluster string) int64 {
	other := unit("other", 1, "1")
	e.Fill(other, clusters(cluster))
	return other.Fits[cluster].Reserved
}

// decideWithoutAView fills and reserves u's placement while the member
// out has no node-level view (it reconnects), then gives the view back.
func decideWithoutAView(e *Estimator, m members, out string, u *framework.Unit, placement []v1alpha1.ClusterPlacement) {
	view := m[out]
	delete(m, out)
	names := make([]string, 0, len(placement))
	for _, c := range placement {
		names = append(names, c.Cluster)
	}
	e.Fill(u, clusters(names...))
	e.Reserve(u, placement, false)
	m[out] = view
}

// A Deployment and a StatefulSet of one name in one namespace are two
// workloads: the StatefulSet's bound pods are not the Deployment's, and
// the end of one's object leaves the other's reservation.
func TestOneNameTwoKinds(t *testing.T) {
	m := members{"m": nodes(1, 8)}
	e := &Estimator{Members: m, Ledger: &ledger.Ledger{}}
	cs := clusters("m")
	sts := unit("web", 2, "1")
	deploy := unit("web", 2, "1")
	deploy.Key, deploy.GVK = "ns/web.deployment.apps", appsv1.SchemeGroupVersion.WithKind("Deployment")
	placed := []v1alpha1.ClusterPlacement{{Cluster: "m", Replicas: ptr.To[int32](2)}}
	for _, u := range []*framework.Unit{sts, deploy} {
		e.Fill(u, cs)
		e.Reserve(u, placed, false)
	}
	other := unit("other", 8, "1")
	if e.Fill(other, cs); other.Fits["m"].Reserved != 4 {
		t.Errorf("both reserved 2: other sees %d reserved, want 4", other.Fits["m"].Reserved)
	}
	// The StatefulSet's two pods are bound: its reservation ends, the
	// Deployment's does not.
	for i := range 2 {
		m["m"].SetPod(fmt.Sprintf("ns/web-%d", i), boundPod("web", fmt.Sprintf("web-%d", i), "n0", "1"))
	}
	if e.Fill(deploy, cs); deploy.Fits["m"].Bound != 0 {
		t.Errorf("the StatefulSet's pods counted as the Deployment's: bound %d, want 0", deploy.Fits["m"].Bound)
	}
	if e.Fill(sts, cs); sts.Fits["m"].Bound != 2 {
		t.Errorf("the StatefulSet's bound pods: %d, want 2", sts.Fits["m"].Bound)
	}
	if e.Fill(other, cs); other.Fits["m"].Reserved != 2 {
		t.Errorf("with the StatefulSet's pods bound, other sees %d reserved, want the Deployment's 2", other.Fits["m"].Reserved)
	}
	// The StatefulSet is deleted: the Deployment's reservation stays.
	e.Forget(sts.Key)
	if e.Fill(other, cs); other.Fits["m"].Reserved != 2 {
		t.Errorf("after the StatefulSet went, other sees %d reserved, want the Deployment's 2", other.Fits["m"].Reserved)
	}
}
