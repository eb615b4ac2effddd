package federate

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/flotilla-io/flotilla/internal/templates"
)

// TestNoteNotApplicableOnce checks that the PolicyNotApplicable event is
// recorded once per template and message, not on every pass.
func TestNoteNotApplicableOnce(t *testing.T) {
	tmpl := func(uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetUID(types.UID(uid))
		return u
	}
	key := templates.Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	passes := []struct {
		uid, msg string
		want     bool // an event is recorded
	}{
		{"1", "label names A", true},
		{"1", "label names A", false}, // the same again
		{"1", "label names A", false},
		{"1", "label names B", true}, // another reason
		{"1", "", false},             // the label applies now (or is gone)
		{"1", "label names B", true}, // and stops applying again
		{"2", "label names B", true}, // a new object of the same name
	}
	rec := events.NewFakeRecorder(len(passes))
	r := &Reconciler{Recorder: rec}
	for i, p := range passes {
		r.noteNotApplicable(context.Background(), key, tmpl(p.uid), p.msg)
		select {
		case e := <-rec.Events:
			if !p.want {
				t.Errorf("pass %d: unexpected event %q", i, e)
			} else if !strings.Contains(e, ReasonPolicyNotApplicable) || !strings.Contains(e, p.msg) {
				t.Errorf("pass %d: event %q, want reason %s and %q", i, e, ReasonPolicyNotApplicable, p.msg)
			}
		default:
			if p.want {
				t.Errorf("pass %d: no event, want one", i)
			}
		}
	}
}
