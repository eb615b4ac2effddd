package federate_test

import (
	"context"
	"fmt"
	"sort"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// secondMember is the member the two-member tests join.
const secondMember = "member-2"

// The failover brakes of the package's control plane: the defaults,
// scaled down so that the tests see them in seconds.
const (
	testGracePeriod          = time.Second
	testSmallFederationGrace = 8 * time.Second
	testObjectsPerMinute     = 6.0 // one every 10 s, burst 1
)

// testFailover are the failover settings of the package's control plane.
var testFailover = func() cluster.Failover {
	f := cluster.DefaultFailover()
	f.GracePeriod = testGracePeriod
	f.SmallFederationGracePeriod = testSmallFederationGrace
	f.ObjectsPerMinutePerCluster = testObjectsPerMinute
	return f
}()

// joinSecondMember joins member-2 for one test and unjoins it after.
func joinSecondMember(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	m := env.Cluster(secondMember)
	if err := join.Join(ctx, join.Options{Name: secondMember, Host: env.Host.Config, Member: m.Config, Labels: m.Labels}); err != nil {
		t.Fatalf("join %s: %v", secondMember, err)
	}
	t.Cleanup(func() {
		if err := join.Unjoin(context.Background(), join.UnjoinOptions{Name: secondMember, Host: env.Host.Config, Member: m.Config}); err != nil {
			t.Errorf("unjoin %s: %v", secondMember, err)
		}
	})
	if err := join.WaitReady(ctx, env.Host.Config, secondMember, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestTwoMemberFederationFailsOverGradually: in a federation of two
// members, one member that stops answering is not evicted after the
// ordinary grace period but after the small federation's longer one
// (reported by the EvictionHeld condition meanwhile), and its objects then
// leave it one at a time, at the objects-per-minute rate. Before the
// brakes, the member was tainted NoExecute after the grace period and
// every object left it at once.
func TestTwoMemberFederationFailsOverGradually(t *testing.T) {
	startControlPlane(t)
	joinSecondMember(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: deploymentsIn(ns),
			Placement: v1alpha1.Placement{ClusterNames: []string{memberName, secondMember}}},
	}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c"}
	for _, n := range names {
		if err := admin.Create(ctx, testenv.MakeDeployment(n, ns).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	placed := func(ctx context.Context, name string) (map[string]bool, *v1alpha1.FederatedObject, error) {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".deployment.apps"}, fo); err != nil {
			return nil, nil, err
		}
		out := map[string]bool{}
		for _, p := range fo.Placement() {
			out[p.Cluster] = true
		}
		return out, fo, nil
	}
	testenv.Eventually(t, waitTimeout, "every Deployment copied to both members", func(ctx context.Context) error {
		for _, n := range names {
			if got, _, err := placed(ctx, n); err != nil || len(got) != 2 {
				return fmt.Errorf("%s placed on %v (err %v)", n, got, err)
			}
			if _, err := env.Cluster(secondMember).Client.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s in %s: %w", n, secondMember, err)
			}
		}
		return nil
	})
	limitedBefore := metricSum(t, "flotilla_failover_object_evictions_rate_limited_total", secondMember)

	env.Signal(t, secondMember, "kube-apiserver", syscall.SIGSTOP)

	// Eviction waits for the small federation's grace period, and says so.
	var heldSeen bool
	var noSchedule, noExecute *metav1.Time
	testenv.Eventually(t, waitTimeout, secondMember+" tainted NoExecute", func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := admin.Get(ctx, client.ObjectKey{Name: secondMember}, mc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionEvictionHeld); c != nil && c.Reason == "SmallFederation" {
			heldSeen = true
		}
		noSchedule, noExecute = nil, nil
		for _, tn := range mc.Spec.Taints {
			if tn.Key != v1alpha1.TaintUnreachable {
				continue
			}
			if tn.Effect == corev1.TaintEffectNoSchedule {
				noSchedule = tn.TimeAdded
			} else if tn.Effect == corev1.TaintEffectNoExecute {
				noExecute = tn.TimeAdded
			}
		}
		if noSchedule == nil || noExecute == nil {
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		}
		return nil
	})
	// TimeAdded has second precision.
	if d := noExecute.Sub(noSchedule.Time); d < testSmallFederationGrace-time.Second {
		t.Errorf("NoExecute %s after NoSchedule, want the small federation's grace period %s (the ordinary one is %s)", d, testSmallFederationGrace, testGracePeriod)
	}
	if !heldSeen {
		t.Errorf("no EvictionHeld=True/SmallFederation condition on %s while it waited", secondMember)
	}

	// The objects leave the failed member one at a time.
	left := map[string]time.Time{}
	testenv.Eventually(t, 2*time.Minute, "every Deployment placed on "+memberName+" only", func(ctx context.Context) error {
		for _, n := range names {
			if _, done := left[n]; done {
				continue
			}
			got, _, err := placed(ctx, n)
			if err != nil {
				return err
			}
			if !got[secondMember] {
				left[n] = time.Now()
			}
		}
		if len(left) < len(names) {
			return fmt.Errorf("%d of %d left %s", len(left), len(names), secondMember)
		}
		return nil
	})
	var times []time.Time
	for _, at := range left {
		times = append(times, at)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	interval := time.Duration(float64(time.Minute) / testObjectsPerMinute)
	for i := 1; i < len(times); i++ {
		// The poll sees each move within its interval; allow a second.
		if gap := times[i].Sub(times[i-1]); gap < interval-time.Second {
			t.Errorf("move %d came %s after move %d, want at least %s (%g objects a minute): moves at %v", i+1, gap, i, interval, testObjectsPerMinute, times)
		}
	}
	if got := metricSum(t, "flotilla_failover_object_evictions_rate_limited_total", secondMember) - limitedBefore; got < 1 {
		t.Errorf("flotilla_failover_object_evictions_rate_limited_total{cluster=%q} grew by %g, want at least 1", secondMember, got)
	}
}

// metricSum reads a counter of the in-process control plane for one
// cluster label (0 when absent).
func metricSum(t *testing.T, name, clusterLabel string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == clusterLabel {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
