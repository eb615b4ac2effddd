package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/ratelimit"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// TestClustersPerMinute: two members of a five-zone federation due for
// eviction at once are tainted NoExecute one a minute; the second is held
// (RateLimited) and looked at again when its token is due.
func TestClustersPerMinute(t *testing.T) {
	since := metav1.NewTime(tNow.Add(-time.Minute))
	var objs []*v1alpha1.MemberCluster
	for i := 1; i <= 5; i++ {
		mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i), Labels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i)}}}
		ready := metav1.ConditionTrue
		if i >= 4 {
			ready = metav1.ConditionUnknown
			mc.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
		}
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready}}
		objs = append(objs, mc)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	r := &Reconciler{Client: b.Build(), Failover: DefaultFailover()}
	view := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	type step struct {
		member      int // index into objs
		at          time.Duration
		wantAllowed bool
		wantHold    string
		wantRecheck time.Duration
	}
	for i, s := range []step{
		{member: 3, at: 0, wantAllowed: true},
		{member: 4, at: 0, wantHold: reasonRateLimited, wantRecheck: time.Minute},
		{member: 4, at: 45 * time.Second, wantHold: reasonRateLimited, wantRecheck: 15 * time.Second},
		{member: 4, at: time.Minute, wantAllowed: true},
	} {
		plan, h, recheck, err := r.evictionPlan(context.Background(), objs[s.member], view, tNow.Add(s.at))
		if err != nil {
			t.Fatal(err)
		}
		gotHold := ""
		if h != nil {
			gotHold = h.reason
		}
		if plan.allowed != s.wantAllowed || gotHold != s.wantHold || recheck != s.wantRecheck {
			t.Errorf("step %d: %s at +%s: allowed %v, hold %q, recheck %s; want %v, %q, %s", i, objs[s.member].Name, s.at, plan.allowed, gotHold, recheck, s.wantAllowed, s.wantHold, s.wantRecheck)
		}
		if plan.allowed {
			taints, _ := renderTaints(objs[s.member].Spec.Taints, view, plan, tNow.Add(s.at))
			if addedNoExecute(objs[s.member].Spec.Taints, taints) == nil {
				t.Errorf("step %d: allowed but no NoExecute taint rendered: %v", i, taints)
			}
		}
	}
}

// TestSmallFederationHold: in a two-member federation a member not Ready
// is looked at again when the ordinary grace period ends, is then held
// (SmallFederation) and is evicted when the longer grace period ends.
func TestSmallFederationHold(t *testing.T) {
	since := metav1.NewTime(tNow)
	down := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	down.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
	down.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionUnknown}}
	healthy := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	healthy.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(down, healthy).Build(), Failover: DefaultFailover()}
	view := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	for _, s := range []struct {
		at          time.Duration
		wantHold    string
		wantRecheck time.Duration
		wantNext    time.Duration // renderTaints' time to NoExecute
	}{
		{at: 10 * time.Second, wantRecheck: 20 * time.Second, wantNext: 290 * time.Second},
		{at: 30 * time.Second, wantHold: reasonSmallFederation, wantNext: 270 * time.Second},
		{at: 5 * time.Minute},
	} {
		now := tNow.Add(s.at)
		plan, h, recheck, err := r.evictionPlan(context.Background(), down, view, now)
		if err != nil {
			t.Fatal(err)
		}
		gotHold := ""
		if h != nil {
			gotHold = h.reason
		}
		taints, next := renderTaints(down.Spec.Taints, view, plan, now)
		evicted := addedNoExecute(down.Spec.Taints, taints) != nil
		if gotHold != s.wantHold || recheck != s.wantRecheck || next != s.wantNext || evicted != (s.at == 5*time.Minute) {
			t.Errorf("+%s: hold %q, recheck %s, next %s, evicted %v; want %q, %s, %s, %v", s.at, gotHold, recheck, next, evicted, s.wantHold, s.wantRecheck, s.wantNext, s.at == 5*time.Minute)
		}
	}
}

// TestGraceRestartsWhenADisruptionEnds: every member was unreachable (the
// eviction of each held back as EvictionSuppressed); two come back while
// the third, not Ready for two minutes by then, is still coming. The third
// gets a fresh grace period from the end of the disruption, once, rather
// than an eviction at once; other holds, or none, change nothing.
func TestGraceRestartsWhenADisruptionEnds(t *testing.T) {
	since := metav1.NewTime(tNow.Add(-2 * time.Minute))
	held := func(reason string, from metav1.Time) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionEvictionHeld, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: from}}
	}
	unreachable := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		othersDown bool // member-b is still unreachable too
		conds      []metav1.Condition
		noSchedule metav1.Time // the NoSchedule taint's TimeAdded
		view       healthView
		wantHold   string
		wantNext   time.Duration // time to NoExecute; 0: evicted now (or held)
	}{
		{name: "suppressed until now: a fresh grace period", conds: held(reasonSuppressed, since), noSchedule: since, view: unreachable, wantNext: 30 * time.Second},
		{name: "suppression began after the failure: a fresh grace period", conds: held(reasonSuppressed, metav1.NewTime(tNow.Add(-time.Minute))), noSchedule: since, view: unreachable, wantNext: 30 * time.Second},
		{name: "now not ready rather than unreachable: a fresh grace period all the same", conds: held(reasonSuppressed, since), noSchedule: since,
			view: healthView{known: true, taintKey: v1alpha1.TaintNotReady}, wantNext: 30 * time.Second},
		{name: "restarted already (its status write failed): no second restart", conds: held(reasonSuppressed, since), noSchedule: metav1.NewTime(tNow.Add(-20 * time.Second)), view: unreachable, wantNext: 10 * time.Second},
		{name: "still suppressed: held, no restart", othersDown: true, conds: held(reasonSuppressed, since), noSchedule: since, view: unreachable, wantHold: reasonSuppressed},
		{name: "never held back: evicted at once", noSchedule: since, view: unreachable},
		{name: "held by its zone's partial disruption: evicted at once", conds: held(reasonZonePartial, since), noSchedule: since, view: unreachable},
		{name: "held by the rate limit: evicted at once", conds: held(reasonRateLimited, since), noSchedule: since, view: unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := func(name string, ready bool) *v1alpha1.MemberCluster {
				mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: "zone-" + name}}}
				mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
				if !ready {
					mc.Status.Conditions[0].Status = metav1.ConditionUnknown
					mc.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
				}
				return mc
			}
			last := member("c", false)
			last.Spec.Taints[0].TimeAdded = &tc.noSchedule
			last.Status.Conditions = append(last.Status.Conditions, tc.conds...)
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(member("a", true), member("b", !tc.othersDown), last).Build(), Failover: DefaultFailover()}
			plan, h, _, err := r.evictionPlan(context.Background(), last, tc.view, tNow)
			if err != nil {
				t.Fatal(err)
			}
			gotHold := ""
			if h != nil {
				gotHold = h.reason
			}
			if gotHold != tc.wantHold {
				t.Fatalf("hold %q, want %q", gotHold, tc.wantHold)
			}
			if plan.tookToken && tc.wantNext > 0 {
				t.Errorf("a clusters-per-minute token was taken for an eviction that is not due")
			}
			taints, next := renderTaints(last.Spec.Taints, tc.view, plan, tNow)
			evicted := addedNoExecute(last.Spec.Taints, taints) != nil
			if wantEvicted := tc.wantNext == 0 && tc.wantHold == ""; evicted != wantEvicted || next != tc.wantNext {
				t.Fatalf("evicted %v, next %s; want evicted %v, next %s (taints %v)", evicted, next, wantEvicted, tc.wantNext, taints)
			}
			if tc.wantNext != 30*time.Second {
				return
			}
			if got := unhealthySince(taints, tNow); !got.Equal(tNow) {
				t.Errorf("the grace period counts from %s, want %s (the end of the disruption)", got, tNow)
			}
			// The taint is written but the status write that drops the
			// condition fails: the next look must not restart again, and
			// the eviction comes 30 s after the end of the disruption.
			last.Spec.Taints = taints
			for _, step := range []struct {
				at      time.Duration
				evicted bool
			}{{20 * time.Second, false}, {30 * time.Second, true}} {
				now := tNow.Add(step.at)
				plan, _, _, err := r.evictionPlan(context.Background(), last, tc.view, now)
				if err != nil {
					t.Fatal(err)
				}
				if plan.restartGrace {
					t.Errorf("+%s: the grace period restarted again", step.at)
				}
				after, _ := renderTaints(last.Spec.Taints, tc.view, plan, now)
				if evicted := addedNoExecute(last.Spec.Taints, after) != nil; evicted != step.evicted {
					t.Errorf("+%s after the disruption: evicted %v, want %v", step.at, evicted, step.evicted)
				}
			}
		})
	}
}

// TestGraceRestartsWhenSuppressionGivesWayToAZoneHold: members come back
// one by one after an outage of the control plane's network. The
// federation-wide suppression ends while the last member's zone is still
// partly down, so its hold turns into ZonePartialDisruption; its grace
// period restarts then, and once the zone is Normal it is evicted a grace
// period later, not at once.
func TestGraceRestartsWhenSuppressionGivesWayToAZoneHold(t *testing.T) {
	since := metav1.NewTime(tNow.Add(-10 * time.Minute))
	unreachable := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	member := func(name, zone string, ready bool) *v1alpha1.MemberCluster {
		mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
		if !ready {
			mc.Status.Conditions[0].Status = metav1.ConditionUnknown
			mc.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
		}
		return mc
	}
	last := member("c", "z1", false)
	last.Status.Conditions = append(last.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionEvictionHeld, Status: metav1.ConditionTrue, Reason: reasonSuppressed, LastTransitionTime: since})
	neighbour := member("d", "z1", false)
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(member("a", "z2", true), member("b", "z3", true), member("e", "z1", true), neighbour, last).Build(), Failover: DefaultFailover()}
	ctx := context.Background()

	plan, h, _, err := r.evictionPlan(ctx, last, unreachable, tNow)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil || h.reason != reasonZonePartial || !plan.restartGrace {
		t.Fatalf("hold %+v, restart %v; want held by the zone with the grace period restarted", h, plan.restartGrace)
	}
	taints, _ := renderTaints(last.Spec.Taints, unreachable, plan, tNow)
	if addedNoExecute(last.Spec.Taints, taints) != nil {
		t.Fatalf("evicted while its zone is partly down: %v", taints)
	}
	last.Spec.Taints = taints
	renderHeld(&last.Status, h, 0, tNow) // the zone's hold keeps the condition's transition time

	// The neighbour comes back: the zone is Normal 10 s later.
	neighbour.Status.Conditions[0].Status, neighbour.Spec.Taints = metav1.ConditionTrue, nil
	if err := r.Client.Update(ctx, neighbour); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		at      time.Duration
		evicted bool
	}{{10 * time.Second, false}, {31 * time.Second, true}} {
		now := tNow.Add(step.at)
		plan, h, _, err := r.evictionPlan(ctx, last, unreachable, now)
		if err != nil {
			t.Fatal(err)
		}
		if plan.restartGrace {
			t.Errorf("+%s: the grace period restarted again", step.at)
		}
		after, _ := renderTaints(last.Spec.Taints, unreachable, plan, now)
		if evicted := addedNoExecute(last.Spec.Taints, after) != nil; evicted != step.evicted {
			t.Errorf("+%s: evicted %v (hold %+v), want %v", step.at, evicted, h, step.evicted)
		}
	}
}

// TestClustersPerMinuteAcrossARestart: a controller-manager that starts
// (a restart, a new leader) while a member was tainted NoExecute 20 s
// ago waits the rest of that member's minute before the next eviction.
func TestClustersPerMinuteAcrossARestart(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm-bucket-%t", warm), func(t *testing.T) { clustersPerMinuteAfterAnEviction(t, warm) })
	}
}

// clustersPerMinuteAfterAnEviction is TestClustersPerMinuteAcrossARestart
// with a fresh bucket, or one that has a token (warm).
func clustersPerMinuteAfterAnEviction(t *testing.T, warm bool) {
	since := metav1.NewTime(tNow.Add(-time.Minute))
	evicted := metav1.NewTime(tNow.Add(-20 * time.Second))
	var objs []*v1alpha1.MemberCluster
	for i := 1; i <= 5; i++ {
		mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i), Labels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i)}}}
		ready := metav1.ConditionTrue
		if i >= 4 {
			ready = metav1.ConditionUnknown
			mc.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
		}
		if i == 4 {
			mc.Spec.Taints = append(mc.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &evicted})
		}
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready}}
		objs = append(objs, mc)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	r := &Reconciler{Client: b.Build(), Failover: DefaultFailover()} // fresh: its bucket starts now
	if warm {
		// A bucket that has a token: the taint 20 s ago was written by a
		// write whose error gave its token back.
		r.clusterBucket = ratelimit.NewBucket(r.Failover.ClustersPerMinute, 1)
	}
	view := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	for _, s := range []struct {
		at          time.Duration
		wantHold    string
		wantRecheck time.Duration
	}{{0, reasonRateLimited, 40 * time.Second}, {40 * time.Second, "", 0}} {
		plan, h, recheck, err := r.evictionPlan(context.Background(), objs[4], view, tNow.Add(s.at))
		if err != nil {
			t.Fatal(err)
		}
		gotHold := ""
		if h != nil {
			gotHold = h.reason
		}
		// Within a second: a taint's TimeAdded is kept to the second.
		if gotHold != s.wantHold || (recheck-s.wantRecheck).Abs() > time.Second || plan.allowed != (s.wantHold == "") {
			t.Errorf("+%s: allowed %v, hold %q, recheck %s; want hold %q, recheck %s", s.at, plan.allowed, gotHold, recheck, s.wantHold, s.wantRecheck)
		}
	}
}

// TestGraceRestartsAfterASuppressionThatCameBack: suppressed, then held
// by its zone (the grace period restarts), then suppressed again, then
// everything but the member is back: the grace period restarts again at
// the end of the second suppression, so the member is not evicted at
// once.
func TestGraceRestartsAfterASuppressionThatCameBack(t *testing.T) {
	since := metav1.NewTime(tNow.Add(-10 * time.Minute))
	unreachable := healthView{known: true, taintKey: v1alpha1.TaintUnreachable}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	member := func(name, zone string) *v1alpha1.MemberCluster {
		mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
		return mc
	}
	setReady := func(mc *v1alpha1.MemberCluster, ready bool) {
		mc.Status.Conditions[0].Status, mc.Spec.Taints = metav1.ConditionTrue, nil
		if !ready {
			mc.Status.Conditions[0].Status = metav1.ConditionUnknown
			mc.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &since}}
		}
	}
	a, b, d, e, last := member("a", "z2"), member("b", "z3"), member("d", "z1"), member("e", "z1"), member("c", "z1")
	setReady(last, false)
	renderHeld(&last.Status, &hold{reason: reasonSuppressed}, 0, since.Time)
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, d, e, last).Build(), Failover: DefaultFailover()}
	ctx := context.Background()
	// look decides at now, writes the taints and the condition as the
	// reconciler does, and reports the hold and whether it evicted.
	look := func(now time.Time, others map[*v1alpha1.MemberCluster]bool) (string, bool) {
		t.Helper()
		for mc, ready := range others {
			setReady(mc, ready)
			if err := r.Client.Update(ctx, mc); err != nil {
				t.Fatal(err)
			}
		}
		plan, h, _, err := r.evictionPlan(ctx, last, unreachable, now)
		if err != nil {
			t.Fatal(err)
		}
		taints, _ := renderTaints(last.Spec.Taints, unreachable, plan, now)
		evicted := addedNoExecute(last.Spec.Taints, taints) != nil
		last.Spec.Taints = taints
		renderHeld(&last.Status, h, 0, now)
		if h == nil {
			return "", evicted
		}
		return h.reason, evicted
	}
	steps := []struct {
		at       time.Duration
		others   map[*v1alpha1.MemberCluster]bool
		wantHold string
		evicted  bool
	}{
		{0, map[*v1alpha1.MemberCluster]bool{d: false}, reasonZonePartial, false},                         // suppression gives way to the zone's hold: restart
		{40 * time.Second, map[*v1alpha1.MemberCluster]bool{a: false, b: false}, reasonSuppressed, false}, // suppressed again
		{2 * time.Minute, map[*v1alpha1.MemberCluster]bool{a: true, b: true, d: true}, "", false},         // all but c back: a fresh grace period
		{2*time.Minute + 31*time.Second, nil, "", true},
	}
	for _, s := range steps {
		hold, evicted := look(tNow.Add(s.at), s.others)
		if hold != s.wantHold || evicted != s.evicted {
			t.Errorf("+%s: hold %q, evicted %v; want hold %q, evicted %v (taints %v)", s.at, hold, evicted, s.wantHold, s.evicted, last.Spec.Taints)
		}
	}
}

func TestSinceEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name      string
		last      time.Time
		perMinute float64
		want      time.Duration
	}{
		{"none", time.Time{}, 1, 0},
		{"unlimited", now.Add(-time.Second), 0, 0},
		{"20 s ago at 1 a minute", now.Add(-20 * time.Second), 1, 40 * time.Second},
		{"a minute ago", now.Add(-time.Minute), 1, 0},
		{"20 s ago at 2 a minute", now.Add(-20 * time.Second), 2, 10 * time.Second},
		{"ahead of the clock", now.Add(time.Hour), 1, time.Minute},
	}
	for _, tt := range tests {
		if got := sinceEviction(tt.last, now, tt.perMinute); (got > 0 || tt.want > 0) && got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
