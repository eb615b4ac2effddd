package maintenance

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestWithTaint(t *testing.T) {
	old := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC))
	cordon := corev1.Taint{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}
	other := corev1.Taint{Key: "example.com/maintenance", Value: "x", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name    string
		in      []corev1.Taint
		want    []corev1.Taint
		changed bool
	}{
		{name: "none", in: nil, want: []corev1.Taint{cordon}, changed: true},
		{name: "after others", in: []corev1.Taint{other}, want: []corev1.Taint{other, cordon}, changed: true},
		{
			name: "present keeps its timeAdded",
			in:   []corev1.Taint{{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &old}, other},
			want: []corev1.Taint{{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &old}, other},
		},
		{
			name:    "same key, other effect",
			in:      []corev1.Taint{{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectPreferNoSchedule}},
			want:    []corev1.Taint{{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectPreferNoSchedule}, cordon},
			changed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]corev1.Taint(nil), tc.in...)
			got, changed := WithTaint(tc.in, cordon)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("taints = %v, want %v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("input modified: %v, was %v", tc.in, before)
			}
		})
	}
}

func TestWithoutTaints(t *testing.T) {
	cordon := corev1.Taint{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	draining := corev1.Taint{Key: v1alpha1.TaintDraining, Effect: corev1.TaintEffectNoExecute}
	a := corev1.Taint{Key: "example.com/a", Effect: corev1.TaintEffectNoSchedule}
	b := corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name    string
		in      []corev1.Taint
		want    []corev1.Taint
		changed bool
	}{
		{name: "none", in: nil, want: nil},
		{name: "only others", in: []corev1.Taint{a, b}, want: []corev1.Taint{a, b}},
		{name: "both", in: []corev1.Taint{cordon, draining}, want: []corev1.Taint{}, changed: true},
		{name: "others kept in order", in: []corev1.Taint{b, cordon, a, draining}, want: []corev1.Taint{b, a}, changed: true},
		{
			name:    "any effect",
			in:      []corev1.Taint{{Key: v1alpha1.TaintDraining, Effect: corev1.TaintEffectNoSchedule}, a},
			want:    []corev1.Taint{a},
			changed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]corev1.Taint(nil), tc.in...)
			got, changed := WithoutTaints(tc.in, v1alpha1.TaintUnschedulable, v1alpha1.TaintDraining)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("taints = %v, want %v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("input modified: %v, was %v", tc.in, before)
			}
		})
	}
}

func TestRemainingObjects(t *testing.T) {
	fo := func(ns, name string, placed []string, status map[string]v1alpha1.PropagationReason) v1alpha1.FederatedObject {
		o := v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, c := range placed {
			o.Status.ScheduledClusters = append(o.Status.ScheduledClusters, v1alpha1.ClusterPlacement{Cluster: c})
		}
		for c, r := range status {
			o.Status.Clusters = append(o.Status.Clusters, v1alpha1.ClusterPropagationStatus{Cluster: c, Reason: r})
		}
		return o
	}
	objs := []v1alpha1.FederatedObject{
		fo("b", "placed-only", []string{"m1"}, nil),
		fo("a", "ok", []string{"m1", "m2"}, map[string]v1alpha1.PropagationReason{"m1": v1alpha1.PropagationOK}),
		fo("a", "evicting", []string{"m2"}, map[string]v1alpha1.PropagationReason{"m1": v1alpha1.PropagationEvicting, "m2": v1alpha1.PropagationOK}),
		fo("a", "elsewhere", []string{"m2"}, map[string]v1alpha1.PropagationReason{"m2": v1alpha1.PropagationOK}),
		fo("a", "nowhere", nil, nil),
		// A claim's or a namespace's copy kept on purpose does not hold
		// the drain.
		fo("c", "kept", []string{"m2"}, map[string]v1alpha1.PropagationReason{"m1": v1alpha1.PropagationRetained, "m2": v1alpha1.PropagationOK}),
	}
	tests := []struct {
		name    string
		objs    []v1alpha1.FederatedObject
		cluster string
		want    []string
	}{
		{name: "no objects", objs: nil, cluster: "m1", want: nil},
		{name: "m1", objs: objs, cluster: "m1", want: []string{"a/evicting (Evicting)", "a/ok (OK)", "b/placed-only (placed, no status yet)"}},
		{name: "m2", objs: objs, cluster: "m2", want: []string{"a/elsewhere (OK)", "a/evicting (OK)", "a/ok (placed, no status yet)", "c/kept (OK)"}},
		{name: "unknown cluster", objs: objs, cluster: "m3", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Remaining(tc.objs, tc.cluster) {
				got = append(got, r.String())
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("remaining = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTimeoutError(t *testing.T) {
	var remaining []Object
	for i := range 12 {
		remaining = append(remaining, Object{Namespace: "ns", Name: string(rune('a' + i)), Reason: v1alpha1.PropagationEvicting})
	}
	tests := []struct {
		name      string
		remaining []Object
		want      []string
		not       []string
	}{
		{
			name:      "few",
			remaining: remaining[:2],
			want:      []string{"membercluster/m1 not drained after 10m0s", "2 objects remain: ns/a (Evicting), ns/b (Evicting);", v1alpha1.TaintDraining, "placement.tolerations"},
			not:       []string{"more"},
		},
		{
			name:      "more than ten",
			remaining: remaining,
			want:      []string{"12 objects remain", "ns/j (Evicting), and 2 more;"},
			not:       []string{"ns/k"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := TimeoutError("m1", 10*time.Minute, tc.remaining).Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(msg, n) {
					t.Errorf("error %q contains %q", msg, n)
				}
			}
		})
	}
}

func fedObj(name string, gen int64, placed []string, scheduled *metav1.Condition) v1alpha1.FederatedObject {
	o := v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: gen}}
	for _, c := range placed {
		o.Status.ScheduledClusters = append(o.Status.ScheduledClusters, v1alpha1.ClusterPlacement{Cluster: c})
	}
	if scheduled != nil {
		o.Status.Conditions = []metav1.Condition{*scheduled}
	}
	return o
}

func names(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func TestOnlyOnAndStranded(t *testing.T) {
	unschedulable := func(gen int64) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable, ObservedGeneration: gen}
	}
	objs := []v1alpha1.FederatedObject{
		fedObj("only-m1", 1, []string{"m1"}, nil),
		fedObj("both", 1, []string{"m1", "m2"}, nil),
		fedObj("only-m2", 1, []string{"m2"}, unschedulable(1)),
		fedObj("stuck", 3, []string{"m1"}, unschedulable(3)),
		fedObj("stuck-old-gen", 3, []string{"m1"}, unschedulable(2)),
		fedObj("scheduled", 1, []string{"m1", "m2"}, &metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", ObservedGeneration: 1}),
		fedObj("other-false", 1, []string{"m1"}, &metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: "WebhookFailed", ObservedGeneration: 1}),
	}
	tests := []struct {
		name string
		got  []Object
		want []string
	}{
		{name: "only on m1", got: OnlyOn(objs, "m1"), want: []string{"only-m1", "other-false", "stuck", "stuck-old-gen"}},
		{name: "only on m2", got: OnlyOn(objs, "m2"), want: []string{"only-m2"}},
		{name: "stranded on m1", got: Stranded(objs, "m1"), want: []string{"stuck"}},
		{name: "stranded on m2", got: Stranded(objs, "m2"), want: []string{"only-m2"}},
		{name: "stranded on m3", got: Stranded(objs, "m3"), want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.got); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEligibleOthers(t *testing.T) {
	now := metav1.Now()
	mc := func(name string, ready bool, taints ...corev1.Taint) v1alpha1.MemberCluster {
		c := v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MemberClusterSpec{Taints: taints}}
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status}}
		return c
	}
	deleting := mc("deleting", true)
	deleting.DeletionTimestamp = &now
	clusters := []v1alpha1.MemberCluster{
		mc("self", true),
		mc("ready", true),
		mc("ready-prefer", true, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}),
		mc("not-ready", false),
		mc("cordoned", true, CordonTaint(time.Now())),
		mc("evicting", true, corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute}),
		deleting,
	}
	if got, want := EligibleOthers(clusters, "self"), []string{"ready", "ready-prefer"}; !slices.Equal(got, want) {
		t.Errorf("EligibleOthers = %v, want %v", got, want)
	}
	if got := EligibleOthers(clusters[3:], "self"); len(got) != 0 {
		t.Errorf("EligibleOthers without a healthy cluster = %v, want none", got)
	}
}

func TestStrandedError(t *testing.T) {
	err := StrandedError("m1", []Object{{Namespace: "a", Name: "x"}, {Namespace: "b", Name: "y"}})
	if !errors.Is(err, ErrStranded) {
		t.Errorf("%v does not wrap ErrStranded", err)
	}
	for _, want := range []string{"membercluster/m1", "2 objects", "a/x, b/y", "flotilla drain m1 --force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
}

func TestDrainTaint(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	if got := DrainTaint(now, false); got.Value != "" || got.Effect != corev1.TaintEffectNoExecute || got.Key != v1alpha1.TaintDraining || !got.TimeAdded.Time.Equal(now.Truncate(time.Second)) {
		t.Errorf("DrainTaint = %+v", got)
	}
	if got := DrainTaint(now, true); got.Value != v1alpha1.DrainForce {
		t.Errorf("forced DrainTaint value %q, want %q", got.Value, v1alpha1.DrainForce)
	}
	// A forced drain over a plain one changes the value in place.
	plain := []corev1.Taint{CordonTaint(now), DrainTaint(now, false)}
	got, changed := WithTaint(plain, DrainTaint(now.Add(time.Hour), true))
	if !changed || len(got) != 2 || got[1].Value != v1alpha1.DrainForce || !got[1].TimeAdded.Time.Equal(now.Truncate(time.Second)) {
		t.Errorf("force over plain: %+v (changed %v)", got, changed)
	}
	// A plain drain over a forced one takes the force away, keeping timeAdded.
	got, changed = WithTaint(got, DrainTaint(now.Add(2*time.Hour), false))
	if !changed || len(got) != 2 || got[1].Value != "" || !got[1].TimeAdded.Time.Equal(now.Truncate(time.Second)) {
		t.Errorf("plain over force: %+v (changed %v)", got, changed)
	}
	if _, changed := WithTaint(got, DrainTaint(now, false)); changed {
		t.Error("a plain drain over a plain one changed the taint")
	}
}
