package propagate

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestDecideEviction(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-time.Minute), now.Add(-time.Hour)
	period := 10 * time.Minute
	tests := []struct {
		name         string
		in           evictionInput
		keep, gone   bool
		replaced     bool
		blockedState bool
		message      string // a part of the message ("" for any)
	}{
		// The bug: "0 of 0 replacements ready" counted as done.
		{name: "empty placement keeps the last copy", in: evictionInput{leftAt: old, period: period, rep: replacements{measurable: true}}, keep: true, blockedState: true},
		{name: "empty placement allowed", in: evictionInput{leftAt: old, period: period, allowEmpty: true, rep: replacements{measurable: true}}, gone: true},
		{name: "forced drain deletes without replacement", in: evictionInput{leftAt: recent, period: period, forced: true}, gone: true, message: "no other cluster takes the object"},
		// --force lets go only what would stay for good: a copy with
		// replacements still waits for them.
		{name: "forced drain still waits for replacements", in: evictionInput{leftAt: recent, period: period, forced: true, rep: replacements{placed: 1, applied: 1, measurable: true, ready: 1, want: 3}}, keep: true},
		{name: "forced drain waits for a placed copy", in: evictionInput{leftAt: recent, period: period, forced: true, rep: replacements{placed: 1, measurable: true, want: 3}}, keep: true, message: "drained with --force"},
		{name: "forced drain, no placed copy by the deadline", in: evictionInput{leftAt: old, period: period, forced: true, rep: replacements{placed: 1, measurable: true, want: 3}}, gone: true},
		{name: "forced drain, none ready by the deadline", in: evictionInput{leftAt: old, period: period, forced: true, rep: replacements{placed: 1, applied: 1, measurable: true, want: 3}}, gone: true, message: "drained with --force"},
		{name: "no placed copy yet (unmeasurable kind)", in: evictionInput{leftAt: old, period: period, rep: replacements{placed: 2}}, keep: true, blockedState: true},
		{name: "unmeasurable kind with a placed copy", in: evictionInput{leftAt: recent, period: period, rep: replacements{placed: 2, applied: 1}}, gone: true},
		{name: "replacements ready", in: evictionInput{leftAt: recent, period: period, rep: replacements{placed: 1, applied: 1, measurable: true, ready: 3, want: 3}}, gone: true, replaced: true},
		{name: "waiting within the period", in: evictionInput{leftAt: recent, period: period, rep: replacements{placed: 1, applied: 1, measurable: true, ready: 1, want: 3}}, keep: true},
		{name: "period passed with some ready", in: evictionInput{leftAt: old, period: period, rep: replacements{placed: 1, applied: 1, measurable: true, ready: 1, want: 3}}, gone: true},
		{name: "period passed with none ready", in: evictionInput{leftAt: old, period: period, rep: replacements{placed: 1, applied: 1, measurable: true, want: 3}}, keep: true, blockedState: true},
		{name: "zero period needs a placed copy", in: evictionInput{leftAt: recent, rep: replacements{placed: 1, measurable: true, want: 3}}, keep: true, blockedState: true},
		{name: "zero period with a placed copy", in: evictionInput{leftAt: recent, rep: replacements{placed: 1, applied: 1, measurable: true, want: 3}}, gone: true},
		{name: "healthy replacement copies", in: evictionInput{leftAt: recent, period: period, rep: replacements{placed: 2, applied: 2, measurable: true, copies: true, ready: 2, want: 2}}, gone: true, replaced: true, message: "the 2 replacement copies are Ready"},
		{name: "waiting for replacement copies", in: evictionInput{leftAt: recent, period: period, rep: replacements{placed: 2, applied: 2, measurable: true, copies: true, ready: 1, want: 2}}, keep: true, message: "until the replacement copies are Ready in the other clusters (1/2 now)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.now = now
			got := decideEviction(tc.in)
			if got.keep != tc.keep || got.keep == tc.gone || got.replaced != tc.replaced || got.blocked != tc.blockedState {
				t.Errorf("decideEviction = %+v, want keep=%v replaced=%v blocked=%v", got, tc.keep, tc.replaced, tc.blockedState)
			}
			if !strings.Contains(got.message, tc.message) {
				t.Errorf("message %q, want one with %q", got.message, tc.message)
			}
			if got.message == "" {
				t.Error("no message")
			}
			if got.keep && !got.deadline.After(now) {
				t.Errorf("a kept copy is looked at again at %s, not after now", got.deadline)
			}
		})
	}
}

func TestKeepsOnMove(t *testing.T) {
	obj := func(apiVersion, kind, annotation string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		if annotation != "" {
			u.SetAnnotations(map[string]string{v1alpha1.AnnotationKeepOnMove: annotation})
		}
		return u
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"a claim is kept", obj("v1", "PersistentVolumeClaim", ""), true},
		{"unless it says false", obj("v1", "PersistentVolumeClaim", "false"), false},
		{"a namespace is kept", obj("v1", "Namespace", ""), true},
		{"unless it says false", obj("v1", "Namespace", "false"), false},
		{"a ConfigMap goes", obj("v1", "ConfigMap", ""), false},
		{"unless it says true", obj("v1", "ConfigMap", "true"), true},
		{"another group's kind named PersistentVolumeClaim goes", obj("example.com/v1", "PersistentVolumeClaim", ""), false},
		{"no template", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := keepsOnMove(c.obj); got != c.want {
				t.Errorf("keepsOnMove = %v, want %v", got, c.want)
			}
		})
	}
	mc := &v1alpha1.MemberCluster{}
	if r := retain(mc, v1alpha1.ClusterPropagationStatus{Cluster: "m", Reason: v1alpha1.PropagationOK}); r.drop || r.status.Reason != v1alpha1.PropagationRetained {
		t.Errorf("retain in a member: %+v", r)
	}
	if r := retain(nil, v1alpha1.ClusterPropagationStatus{Cluster: "gone"}); !r.drop {
		t.Errorf("retain in a cluster that left the federation: %+v, want it forgotten", r)
	}
}
