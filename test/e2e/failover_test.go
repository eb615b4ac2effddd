package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestFailover drives cluster failover and maintenance the way a user sees
// them (application failover: TestApplicationFailover), with the
// controller-manager's defaults (30 s to mark a stopped member
// unreachable, 30 s of grace before NoExecute).
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Parallel()
	f := startFed(t)

	t.Run("drain moves everything off member-2 gracefully; uncordon lets it receive again", func(t *testing.T) {
		ns := f.namespace(t, "drain")
		f.create(t, configMap(ns, "settings"))
		f.create(t, deployment(ns, "api", 6, "settings"))
		f.create(t, dividePolicy(ns, nil))
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-1": 2, "member-2": 2, "member-3": 2})
		mon := f.watchReplicas(t, ns, "api")
		r := flotilla(t, "drain", "member-2", "--timeout", "2m", "--host-kubeconfig", f.kubeconfig(localenv.HostName))
		if r.err != nil || !strings.Contains(r.stdout, "drained") {
			t.Fatalf("flotilla drain: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-1": 3, "member-3": 3})
		f.waitHostReady(t, ns, "api", 6)
		if _, err := f.typed["member-2"].CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the follower ConfigMap is still in member-2 after the drain (err %v)", err)
		}
		minReady, maxPods := mon.stop()
		t.Logf("during the drain: Ready replicas across members never below %d, pods never above %d", minReady, maxPods)
		if minReady < 6 {
			t.Errorf("Ready replicas across members dropped to %d during the drain, want at least 6", minReady)
		}
		if table := getTable(t, f, "/apis/flotilla.io/v1alpha1/memberclusters"); !strings.Contains(table, `"member-2","True","Draining"`) {
			t.Errorf("kubectl get memberclusters does not show the drain: %s", table)
		}

		if r := flotilla(t, "uncordon", "member-2", "--host-kubeconfig", f.kubeconfig(localenv.HostName)); r.err != nil {
			t.Fatalf("flotilla uncordon: %v", r.err)
		}
		// The controller-manager has seen the uncordon once the cluster
		// controller reported on that generation (its cache is the one the
		// scheduler reads): a Deployment created before could be placed
		// without member-2, and uncordoning moves nothing back.
		testenv.Eventually(t, time.Minute, "member-2's uncordon observed", func(ctx context.Context) error {
			mc, err := f.mc(ctx, "member-2")
			if err != nil {
				return err
			}
			if mc.Status.ObservedGeneration < mc.Generation {
				return fmt.Errorf("status.observedGeneration %d, generation %d", mc.Status.ObservedGeneration, mc.Generation)
			}
			return nil
		})
		f.create(t, deployment(ns, "fresh", 3, ""))
		f.waitMemberReplicas(t, ns, "fresh", map[string]int32{"member-1": 1, "member-2": 1, "member-3": 1})
		// Uncordoning moves nothing back (avoidDisruption).
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-1": 3, "member-3": 3})
	})

	t.Run("a member's apiserver stops", func(t *testing.T) { clusterFailover(t, f) })
	t.Run("all members' apiservers stop at once", func(t *testing.T) { allMembersStopped(t, f) })
}

// TestApplicationFailover has a federation of its own: most of it is the
// two and a half minutes in which the moved replicas must stay where they
// are, an idle environment, so it runs beside TestFailover (both are
// parallel tests, started once the package's sequential tests are done).
func TestApplicationFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Parallel()
	f := startFed(t)
	t.Run("a member whose nodes fit 2 of its 5 replicas: 3 move, and stay moved", func(t *testing.T) { applicationFailover(t, f) })
}

// dividePolicy splits every Deployment of ns over clusters (all when nil).
func dividePolicy(ns string, clusters []string) *v1alpha1.PropagationPolicy {
	return &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "divide"}, Spec: v1alpha1.PropagationSpec{
		ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
		Placement: v1alpha1.Placement{ClusterNames: clusters,
			ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
	}}
}

// clusterFailover stops member-3's apiserver under a 9-replica Deployment
// split 3/3/3 and follows the move.
func clusterFailover(t *testing.T, f *fed) {
	ns := f.namespace(t, "failover")
	f.create(t, deployment(ns, "web", 9, ""))
	f.create(t, dividePolicy(ns, members))
	f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 3, "member-2": 3, "member-3": 3})
	f.waitHostReady(t, ns, "web", 9)
	mon := f.watchReplicas(t, ns, "web")

	api := f.component(t, "member-3", components.KubeAPIServer)
	stopped := time.Now()
	if err := syscall.Kill(api.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(api.PID, syscall.SIGCONT)
		}
	}()
	testenv.Eventually(t, 2*time.Minute-time.Since(stopped), "9/9 Ready on member-1 and member-2 and the host", func(ctx context.Context) error {
		var ready, spec int32
		for _, m := range []string{"member-1", "member-2"} {
			d, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ready += d.Status.ReadyReplicas
			spec += ptr.Deref(d.Spec.Replicas, 0)
		}
		if ready != 9 || spec != 9 {
			return fmt.Errorf("member-1 + member-2: %d Ready of %d", ready, spec)
		}
		if err := f.hostReady(ctx, ns, "web", 9); err != nil {
			return err
		}
		return nil
	})
	t.Logf("9/9 Ready on the two healthy members %s after member-3's apiserver stopped", time.Since(stopped).Round(time.Second))
	mc, err := f.mc(context.Background(), "member-3")
	if err != nil {
		t.Fatal(err)
	}
	if !hasTaint(mc, v1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute) {
		t.Errorf("member-3 taints %v, want %s:NoExecute", mc.Spec.Taints, v1alpha1.TaintUnreachable)
	}

	if err := syscall.Kill(api.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	f.waitReady(t, "member-3", metav1.ConditionTrue, "", 90*time.Second)
	// The stale copy is deleted; nothing flows back (avoidDisruption). The
	// split (5/4 or 4/5) follows a stable hash of the object's key.
	split := map[string]int32{}
	fo := &v1alpha1.FederatedObject{}
	if err := f.host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}, fo); err != nil {
		t.Fatal(err)
	}
	for _, p := range fo.Placement() {
		split[p.Cluster] = ptr.Deref(p.Replicas, 0)
	}
	if split["member-1"]+split["member-2"] != 9 || len(split) != 2 {
		t.Fatalf("placement after the failover %v, want 9 replicas on member-1 and member-2", split)
	}
	f.waitMemberReplicas(t, ns, "web", split)
	f.waitHostReady(t, ns, "web", 9)
	minReady, maxPods := mon.stop()
	t.Logf("Ready replicas across members never below %d; pods across members never above %d", minReady, maxPods)
	if minReady < 6 {
		t.Errorf("Ready replicas across members dropped to %d, want at least 6", minReady)
	}
	if maxPods > 9+3 { // maxSurge 25% of 9, rounded up
		t.Errorf("pods across members reached %d, want at most 12 (9 + maxSurge)", maxPods)
	}
}

// allMembersStopped stops every member's apiserver at once: the control
// plane blames itself and evicts nothing. Then all but member-1 come back:
// member-1 is evicted only a full grace period after the disruption ended.
func allMembersStopped(t *testing.T, f *fed) {
	ns := f.namespace(t, "blip")
	f.create(t, deployment(ns, "steady", 6, ""))
	f.create(t, dividePolicy(ns, members))
	f.waitMemberReplicas(t, ns, "steady", map[string]int32{"member-1": 2, "member-2": 2, "member-3": 2})
	before := f.placement(t, ns, "steady.deployment.apps")
	var pids []int
	for _, m := range members {
		pid := f.component(t, m, components.KubeAPIServer).PID
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	resume := func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	for _, m := range members {
		f.waitReady(t, m, metav1.ConditionUnknown, v1alpha1.TaintUnreachable, 90*time.Second)
	}
	// Well past the 30 s grace period: no NoExecute taint, no move.
	testenv.Consistently(t, 45*time.Second, func() error {
		for _, m := range members {
			mc, err := f.mc(context.Background(), m)
			if err != nil {
				return err
			}
			if hasTaint(mc, v1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute) {
				return fmt.Errorf("%s was tainted NoExecute while every member was unreachable: %v", m, mc.Spec.Taints)
			}
		}
		if got := f.placement(t, ns, "steady.deployment.apps"); got != before {
			return fmt.Errorf("placement changed from %s to %s while every member was unreachable", before, got)
		}
		return nil
	})
	evs, err := f.typed[localenv.HostName].CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=EvictionSuppressed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Errorf("no EvictionSuppressed event on the MemberClusters")
	} else {
		t.Logf("event: %s", evs.Items[0].Message)
	}
	// Members come back one by one. Once member-2 and member-3 are Ready
	// the disruption is over, and member-1, still stopped and not Ready for
	// well over the grace period by then, gets a fresh grace period from
	// that moment rather than an eviction at once.
	for i, m := range members[1:] {
		_ = syscall.Kill(pids[i+1], syscall.SIGCONT)
		f.waitReady(t, m, metav1.ConditionTrue, "", 90*time.Second)
	}
	var restarted time.Time
	testenv.Eventually(t, time.Minute, "member-1's grace period restarted", func(ctx context.Context) error {
		evs, err := f.typed[localenv.HostName].CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=GracePeriodRestarted,involvedObject.name=" + members[0]})
		if err != nil {
			return err
		}
		if len(evs.Items) == 0 {
			return fmt.Errorf("no GracePeriodRestarted event on %s", members[0])
		}
		if n := len(evs.Items); n > 1 || evs.Items[0].Series != nil && evs.Items[0].Series.Count > 1 {
			t.Errorf("the grace period of %s restarted more than once: %d events, first %+v", members[0], n, evs.Items[0])
		}
		restarted = evs.Items[0].EventTime.Time
		if restarted.IsZero() {
			restarted = evs.Items[0].FirstTimestamp.Time
		}
		t.Logf("event: %s", evs.Items[0].Message)
		return nil
	})
	var evictedAt time.Time
	testenv.Eventually(t, 2*time.Minute, "member-1 tainted NoExecute after its fresh grace period", func(ctx context.Context) error {
		mc, err := f.mc(ctx, members[0])
		if err != nil {
			return err
		}
		for _, taint := range mc.Spec.Taints {
			if taint.Key == v1alpha1.TaintUnreachable && taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded != nil {
				evictedAt = taint.TimeAdded.Time
				return nil
			}
		}
		return fmt.Errorf("taints %v", mc.Spec.Taints)
	})
	// The grace period is 30 s. The taint's time is in whole seconds and
	// the event is recorded once the taint is written, so allow 5 s less
	// (an eviction at once would be ~0 s); a restart repeated at every
	// look (each 10 s) would put it later than 30 s plus a few looks.
	if gap := evictedAt.Sub(restarted); gap < 25*time.Second || gap > 75*time.Second {
		t.Errorf("%s tainted NoExecute %s after the disruption ended (%s, then %s), want the 30 s grace period", members[0], gap, restarted, evictedAt)
	} else {
		t.Logf("%s tainted NoExecute %s after the disruption ended", members[0], gap)
	}
	resume()
	f.waitReady(t, members[0], metav1.ConditionTrue, "", 90*time.Second)
	// The copies of the members that came back first are still there
	// (whether their pods are Ready again is up to each member: its node
	// leases ran out while its apiserver was stopped).
	for _, m := range members[1:] {
		if _, err := f.typed[m].AppsV1().Deployments(ns).Get(context.Background(), "steady", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: copy after the outage: %v", m, err)
		}
	}
}

// slotResource is an extended resource the application failover test gives
// the members' nodes, so that it alone decides where its pods fit.
const slotResource = "e2e.flotilla.io/slot"

// applicationFailover gives member-1 room for 2 pods of a workload that
// places 5 there: after the policy's threshold the 3 Unschedulable replicas
// run in member-2, and stay there for two and a half minutes: past the
// limit's 1-minute hold and its room rechecks a minute apart, so a limit
// lifted without room (the move back a lift would allow) shows.
func applicationFailover(t *testing.T, f *fed) {
	f.setSlots(t, "member-1", 2, 1)
	f.setSlots(t, "member-2", 10, -1)
	ns := f.namespace(t, "appfail")
	d := deployment(ns, "batch", 10, "")
	slot := corev1.ResourceList{slotResource: *resource.NewQuantity(1, resource.DecimalSI)}
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: slot, Limits: slot}
	f.create(t, d)
	p := dividePolicy(ns, []string{"member-1", "member-2"})
	// Listed weights: the split is 5/5 whatever the members' nodes hold
	// (simulated room would place 2/8 from the start), so that member-1's
	// 3 Unschedulable replicas are what moves them.
	p.Spec.Placement.ReplicaScheduling.Weights = []v1alpha1.ClusterWeight{{Cluster: "member-1", Weight: 1}, {Cluster: "member-2", Weight: 1}}
	p.Spec.Failover = &v1alpha1.Failover{Application: &v1alpha1.ApplicationFailover{UnschedulableSeconds: ptr.To[int32](15)}}
	f.create(t, p)
	created := time.Now()
	f.waitMemberReplicas(t, ns, "batch", map[string]int32{"member-1": 2, "member-2": 8})
	f.waitHostReady(t, ns, "batch", 10)
	t.Logf("3 Unschedulable replicas moved from member-1 to member-2; 10/10 Ready %s after creation", time.Since(created).Round(time.Second))
	fo := &v1alpha1.FederatedObject{}
	if err := f.host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "batch.deployment.apps"}, fo); err != nil {
		t.Fatal(err)
	}
	if len(fo.Status.CapacityLimits) != 1 || fo.Status.CapacityLimits[0].Cluster != "member-1" || fo.Status.CapacityLimits[0].Replicas != 2 {
		t.Errorf("capacity limits %+v, want member-1 limited to 2", fo.Status.CapacityLimits)
	}
	placed := f.placement(t, ns, "batch.deployment.apps")
	testenv.Consistently(t, 150*time.Second, func() error {
		if got := f.placement(t, ns, "batch.deployment.apps"); got != placed {
			return fmt.Errorf("placement moved from %s to %s: oscillation", placed, got)
		}
		return nil
	})
	f.waitHostReady(t, ns, "batch", 10)
}

// setSlots gives a member's first n nodes (all when n < 0) count slots each
// and removes the resource when the test ends.
func (f *fed) setSlots(t *testing.T, member string, count, n int) {
	t.Helper()
	ctx := context.Background()
	nodes, err := f.typed[member].CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, node := range nodes.Items {
		if n >= 0 && i >= n {
			break
		}
		patch := fmt.Sprintf(`{"status":{"capacity":{%q:"%d"},"allocatable":{%q:"%d"}}}`, slotResource, count, slotResource, count)
		if _, err := f.typed[member].CoreV1().Nodes().PatchStatus(ctx, node.Name, []byte(patch)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			patch := fmt.Sprintf(`{"status":{"capacity":{%q:null},"allocatable":{%q:null}}}`, slotResource, slotResource)
			if _, err := f.typed[member].CoreV1().Nodes().PatchStatus(context.Background(), node.Name, []byte(patch)); err != nil {
				t.Logf("remove %s from %s: %v", slotResource, node.Name, err)
			}
		})
	}
}

// placement is a FederatedObject's placement as "member-1=2,member-2=8".
func (f *fed) placement(t *testing.T, ns, name string) string {
	t.Helper()
	fo := &v1alpha1.FederatedObject{}
	if err := f.host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, fo); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range fo.Placement() {
		parts = append(parts, fmt.Sprintf("%s=%d", p.Cluster, ptr.Deref(p.Replicas, -1)))
	}
	return strings.Join(parts, ",")
}

func hasTaint(mc *v1alpha1.MemberCluster, key string, effect corev1.TaintEffect) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// hostReady checks that the host Deployment reports n ready replicas for
// its current generation.
func (f *fed) hostReady(ctx context.Context, ns, name string, n int32) error {
	d, err := f.typed[localenv.HostName].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if st := d.Status; st.ObservedGeneration != d.Generation || st.ReadyReplicas != n || st.Replicas != n {
		return fmt.Errorf("host: generation %d, status %+v", d.Generation, st)
	}
	return nil
}

// replicaMonitor samples a Deployment's copies in every member.
type replicaMonitor struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	minReady int32
	maxPods  int32
}

// watchReplicas samples the members every 200 ms: the sum of Ready
// replicas (a member that does not answer counts 0) and the sum of pods
// (a member that does not answer counts what it last reported).
func (f *fed) watchReplicas(t *testing.T, ns, name string) *replicaMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &replicaMonitor{cancel: cancel, minReady: 1 << 30}
	last := map[string]int32{}
	m.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var ready, pods int32
			for _, c := range members {
				rctx, done := context.WithTimeout(ctx, time.Second)
				d, err := f.typed[c].AppsV1().Deployments(ns).Get(rctx, name, metav1.GetOptions{})
				done()
				switch {
				case err == nil:
					ready += d.Status.ReadyReplicas
					last[c] = d.Status.Replicas
				case apierrors.IsNotFound(err):
					last[c] = 0
				}
				pods += last[c]
			}
			if ctx.Err() != nil {
				return
			}
			m.minReady, m.maxPods = min(m.minReady, ready), max(m.maxPods, pods)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() { m.stop() })
	return m
}

// stop ends the sampling and returns the extremes seen.
func (m *replicaMonitor) stop() (minReady, maxPods int32) {
	m.cancel()
	m.wg.Wait()
	return m.minReady, m.maxPods
}
