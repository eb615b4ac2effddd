package propagate

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
)

// recordEvents emits one event on the template per kind of write to the
// members in this pass ("Updated Deployment in clusters a, b, c"), and one
// per cluster whose state turned bad (not Pending; not again while it stays so, to keep
// retries from flooding events). One event per pass rather than per
// cluster keeps a burst of new objects from costing the host an event
// write per member copy. Creating copies records none at all: the
// FederatedObject's status (clusters, Propagated) says where they went,
// a move shows in the scheduler's event, and an event per new object
// would be the largest share of the host writes in a burst of them.
func (r *Reconciler) recordEvents(tmpl *unstructured.Unstructured, before []v1alpha1.ClusterPropagationStatus, results []result) {
	prev := map[string]v1alpha1.ClusterPropagationStatus{}
	for _, c := range before {
		prev[c.Cluster] = c
	}
	var outcomes []string
	written := map[string][]string{}
	for _, res := range results {
		st := res.status
		switch {
		case res.outcome == string(dispatch.Created):
			// Shown by the status.
		case res.outcome != "":
			if _, seen := written[res.outcome]; !seen {
				outcomes = append(outcomes, res.outcome)
			}
			written[res.outcome] = append(written[res.outcome], st.Cluster)
		case st.Reason != v1alpha1.PropagationOK && st.Reason != v1alpha1.PropagationPending && (prev[st.Cluster].Reason != st.Reason || prev[st.Cluster].Message != st.Message):
			// Pending (a member cache listing, a pull member's agent not
			// yet reporting) is on its way, not bad: no event.
			kind := corev1.EventTypeWarning
			if st.Reason == v1alpha1.PropagationDeleting {
				kind = corev1.EventTypeNormal
			}
			r.event(tmpl, kind, string(st.Reason), "Apply", fmt.Sprintf("cluster %s: %s", st.Cluster, st.Message))
		}
	}
	for _, outcome := range outcomes {
		r.event(tmpl, corev1.EventTypeNormal, outcome, "Apply", writtenMessage(outcome, tmpl.GetKind(), written[outcome]))
	}
}

// writtenMessage says what one kind of write did: "Created Deployment in
// cluster a" or "... in clusters a, b".
func writtenMessage(outcome, kind string, clusters []string) string {
	if len(clusters) == 1 {
		return fmt.Sprintf("%s %s in cluster %s", outcome, kind, clusters[0])
	}
	return fmt.Sprintf("%s %s in clusters %s", outcome, kind, strings.Join(clusters, ", "))
}

func (r *Reconciler) event(tmpl *unstructured.Unstructured, kind, reason, action, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(tmpl, nil, kind, reason, action, "%s", msg)
	}
}

func (r *Reconciler) applyTimeout() time.Duration {
	if r.ApplyTimeout > 0 {
		return r.ApplyTimeout
	}
	return defaultApplyTimeout
}

const defaultApplyTimeout = 30 * time.Second
