package propagate

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestNoteHeld: a held namespace's CleanupWaiting event is recorded once
// for each thing that holds it, so that "cannot tell yet" does not hide
// the protected object named once it is known, and nothing repeats every
// pass.
func TestNoteHeld(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	fo := &v1alpha1.FederatedObject{}
	fo.UID = "uid-1"
	for _, step := range []struct{ what, why string }{
		{"unknown", "cannot tell yet"},
		{"unknown", "cannot tell yet"},
		{"ConfigMap/ns/cfg", "held by cfg"},
		{"ConfigMap/ns/cfg", "held by cfg"},
	} {
		r.noteHeld(context.Background(), fo, step.what, step.why)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	if len(got) != 2 || !strings.Contains(got[0], "cannot tell yet") || !strings.Contains(got[1], "held by cfg") {
		t.Fatalf("events %q, want one saying it cannot tell yet, then one naming the object", got)
	}
}
