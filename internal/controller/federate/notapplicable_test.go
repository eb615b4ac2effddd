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
	const (
		notPropagated = "; not propagated"
		follows       = "; it only follows the workloads that reference it"
	)
	passes := []struct {
		uid, why string
		follower bool
		want     string // the event's message; "" for none
	}{
		{uid: "1", why: "label names A", want: "label names A" + notPropagated},
		{uid: "1", why: "label names A"}, // the same again
		{uid: "1", why: "label names A"},
		{uid: "1", why: "label names B", want: "label names B" + notPropagated},           // another reason
		{uid: "1", why: "label names B", follower: true, want: "label names B" + follows}, // now referenced by a workload
		{uid: "1"}, // the label applies now (or is gone)
		{uid: "1", why: "label names B", want: "label names B" + notPropagated}, // and stops applying again
		{uid: "2", why: "label names B", want: "label names B" + notPropagated}, // a new object of the same name
	}
	rec := events.NewFakeRecorder(len(passes))
	r := &Reconciler{Recorder: rec}
	for i, p := range passes {
		r.noteNotApplicable(context.Background(), key, tmpl(p.uid), p.why, p.follower)
		select {
		case e := <-rec.Events:
			if p.want == "" {
				t.Errorf("pass %d: unexpected event %q", i, e)
			} else if !strings.Contains(e, ReasonPolicyNotApplicable) || !strings.HasSuffix(e, p.want) {
				t.Errorf("pass %d: event %q, want reason %s and %q", i, e, ReasonPolicyNotApplicable, p.want)
			}
		default:
			if p.want != "" {
				t.Errorf("pass %d: no event, want one", i)
			}
		}
	}
}
