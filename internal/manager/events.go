package manager

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// noteLimit is the longest event note, in bytes, the events API accepts:
// a longer one is refused and the event is lost.
const noteLimit = 1024

// eventRecorder is the manager's recorder for a controller, with notes
// cut to what the events API accepts (conditions keep whole messages).
func eventRecorder(mgr ctrl.Manager, controller string) events.EventRecorder {
	return boundedRecorder{mgr.GetEventRecorder("flotilla-" + controller)}
}

// boundedRecorder cuts every note to noteLimit.
type boundedRecorder struct{ events.EventRecorder }

// Eventf records an event whose note is at most noteLimit bytes.
func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", boundNote(fmt.Sprintf(note, args...)))
}

// boundNote is s cut to noteLimit bytes at a character boundary, ending
// in "..." when cut.
func boundNote(s string) string {
	if len(s) <= noteLimit {
		return s
	}
	cut := noteLimit - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
