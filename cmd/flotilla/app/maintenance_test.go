package app

import (
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
			got, changed := withTaint(tc.in, cordon)
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
			got, changed := withoutTaints(tc.in, v1alpha1.TaintUnschedulable, v1alpha1.TaintDraining)
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
			o.Spec.Placement = append(o.Spec.Placement, v1alpha1.ClusterPlacement{Cluster: c})
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
	}
	tests := []struct {
		name    string
		objs    []v1alpha1.FederatedObject
		cluster string
		want    []string
	}{
		{name: "no objects", objs: nil, cluster: "m1", want: nil},
		{name: "m1", objs: objs, cluster: "m1", want: []string{"a/evicting (Evicting)", "a/ok (OK)", "b/placed-only (placed, no status yet)"}},
		{name: "m2", objs: objs, cluster: "m2", want: []string{"a/elsewhere (OK)", "a/evicting (OK)", "a/ok (placed, no status yet)"}},
		{name: "unknown cluster", objs: objs, cluster: "m3", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range remainingObjects(tc.objs, tc.cluster) {
				got = append(got, r.String())
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("remaining = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRemainingDrainTimeoutError(t *testing.T) {
	var remaining []remainingObject
	for i := range 12 {
		remaining = append(remaining, remainingObject{Namespace: "ns", Name: string(rune('a' + i)), Reason: v1alpha1.PropagationEvicting})
	}
	tests := []struct {
		name      string
		remaining []remainingObject
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
			msg := drainTimeoutError("m1", 10*time.Minute, tc.remaining).Error()
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

func TestMaintenanceCommands(t *testing.T) {
	root := NewRootCmd(Streams{Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	for _, name := range []string{"cordon", "uncordon", "drain"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("%s is not registered: %v", name, err)
		}
		if err := cmd.Args(cmd, nil); err == nil {
			t.Errorf("%s accepts no argument", name)
		}
		if err := cmd.Args(cmd, []string{"a", "b"}); err == nil {
			t.Errorf("%s accepts two arguments", name)
		}
		hasWait := cmd.Flags().Lookup("wait") != nil && cmd.Flags().Lookup("timeout") != nil
		if hasWait != (name == "drain") {
			t.Errorf("%s: --wait and --timeout present = %v", name, hasWait)
		}
		if cmd.Flags().Lookup("host-kubeconfig") == nil {
			t.Errorf("%s has no --host-kubeconfig", name)
		}
	}
	drain, _, _ := root.Find([]string{"drain"})
	if got := drain.Flags().Lookup("timeout").DefValue; got != "10m0s" {
		t.Errorf("drain --timeout default = %s, want 10m0s", got)
	}
	o := &MaintenanceOptions{Cluster: "m1", action: actionDrain, Wait: true}
	if err := o.Validate(); err == nil {
		t.Error("drain with --timeout 0 is accepted")
	}
	o.Wait = false
	if err := o.Validate(); err != nil {
		t.Errorf("drain --wait=false --timeout 0: %v", err)
	}
}
