package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

func TestRuleOf(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"spec.status.fields[8].expression: no such key: collisionCount", "spec.status.fields[8].expression"},
		{"status.replicas: a member reports a string, not a number", "status.replicas"},
		{"no colon here", "no colon here"},
	} {
		if got := ruleOf(tc.msg); got != tc.want {
			t.Errorf("ruleOf(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// TestReportRuleOncePerFailure: one event per rule that starts failing on
// an object, again after ruleReportEvery, and for a new object of the
// same name; not for each pass or each new value a message quotes.
func TestReportRuleOncePerFailure(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Recorder: rec, now: func() time.Time { return now }}
	key := types.NamespacedName{Namespace: "demo", Name: "web.cloneset.apps.kruise.io"}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion("apps.kruise.io/v1alpha1")
	tmpl.SetKind("CloneSet")
	tmpl.SetNamespace("demo")
	tmpl.SetName("web")
	tmpl.SetUID("uid-1")
	ctx := t.Context()
	steps := []struct {
		what    string
		advance time.Duration
		uid     types.UID
		err     error
		events  int
	}{
		{"first failure", 0, "uid-1", errors.New("spec.status.fields[8].expression: no such key: collisionCount"), 1},
		{"the same failure again", time.Minute, "uid-1", errors.New("spec.status.fields[8].expression: no such key: collisionCount"), 0},
		{"the same rule quoting another value", time.Minute, "uid-1", errors.New(`spec.status.fields[8].expression: type conversion error from "x"`), 0},
		{"success in between", time.Minute, "uid-1", nil, 0},
		{"the same rule once more", time.Minute, "uid-1", errors.New("spec.status.fields[8].expression: no such key: collisionCount"), 0},
		{"another rule", time.Minute, "uid-1", errors.New("status.replicas: a member reports a string, not a number"), 1},
		{"still failing after the report period", ruleReportEvery, "uid-1", errors.New("status.replicas: a member reports a string, not a number"), 1},
		{"a new object of the same name", time.Minute, "uid-2", errors.New("status.replicas: a member reports a string, not a number"), 1},
		{"a very long message", time.Minute, "uid-2", errors.New("spec.status.fields[1].expression: " + strings.Repeat("x", 4000)), 1},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		tmpl.SetUID(s.uid)
		r.reportRule(ctx, key, tmpl, s.err)
		got := 0
		for len(rec.Events) > 0 {
			e := <-rec.Events
			got++
			if !strings.HasPrefix(e, "Warning StatusRuleFailed ") || len(e) > maxNote+len("Warning StatusRuleFailed ")+8 {
				t.Errorf("%s: event %.120q...; want a Warning StatusRuleFailed of at most %d bytes", s.what, e, maxNote)
			}
		}
		if got != s.events {
			t.Errorf("%s: %d events, want %d", s.what, got, s.events)
		}
	}
}

// TestReportRefusedOncePerObject: a status the host refuses is reported
// once per object and period, as a Warning StatusRefused that says no
// status field is updated.
func TestReportRefusedOncePerObject(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Recorder: rec, now: func() time.Time { return now }}
	key := types.NamespacedName{Namespace: "demo", Name: "web.cloneset.apps.kruise.io"}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetKind("CloneSet")
	tmpl.SetNamespace("demo")
	tmpl.SetName("web")
	tmpl.SetUID("uid-1")
	refused := errors.New(`CloneSet.apps.kruise.io "web" is invalid: status.replicas: Invalid value: "string": status.replicas in body must be of type integer`)
	for i, want := range []int{1, 0} {
		// A status rule failing in the same passes does not reset the
		// refusal's period.
		r.reportRule(t.Context(), key, tmpl, errors.New("status.replicas: a member reports a string, not a number"))
		for len(rec.Events) > 0 {
			if e := <-rec.Events; !strings.HasPrefix(e, "Warning StatusRuleFailed ") {
				t.Errorf("event %q", e)
			}
		}
		r.reportRefused(t.Context(), key, tmpl, refused)
		got := 0
		for len(rec.Events) > 0 {
			e := <-rec.Events
			got++
			if !strings.HasPrefix(e, "Warning StatusRefused ") || !strings.Contains(e, "none of this object's status fields is updated") {
				t.Errorf("event %q", e)
			}
		}
		if got != want {
			t.Errorf("pass %d: %d events, want %d", i, got, want)
		}
		now = now.Add(time.Minute)
	}
}

func TestStalledDelay(t *testing.T) {
	for _, tt := range []struct {
		passes int
		want   time.Duration
	}{
		{0, 5 * time.Second},
		{1, 10 * time.Second},
		{4, 80 * time.Second},
		{5, 2 * time.Minute},
		{64, 2 * time.Minute}, // no overflow of the shift
	} {
		if got := stalledDelay(tt.passes); got != tt.want {
			t.Errorf("stalledDelay(%d) = %v, want %v", tt.passes, got, tt.want)
		}
	}
}
