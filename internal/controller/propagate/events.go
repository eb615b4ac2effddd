package propagate

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// recordEvents emits an event on the template for each write to a member
// and for each cluster whose state turned bad (not again while it stays
// so, to keep retries from flooding events).
func (r *Reconciler) recordEvents(tmpl *unstructured.Unstructured, before []v1alpha1.ClusterPropagationStatus, results []result) {
	prev := map[string]v1alpha1.ClusterPropagationStatus{}
	for _, c := range before {
		prev[c.Cluster] = c
	}
	for _, res := range results {
		st := res.status
		switch {
		case res.outcome != "":
			r.event(tmpl, corev1.EventTypeNormal, res.outcome, "Apply", fmt.Sprintf("%s %s in cluster %s", res.outcome, tmpl.GetKind(), st.Cluster))
		case st.Reason != v1alpha1.PropagationOK && (prev[st.Cluster].Reason != st.Reason || prev[st.Cluster].Message != st.Message):
			kind := corev1.EventTypeWarning
			if st.Reason == v1alpha1.PropagationDeleting {
				kind = corev1.EventTypeNormal
			}
			r.event(tmpl, kind, string(st.Reason), "Apply", fmt.Sprintf("cluster %s: %s", st.Cluster, st.Message))
		}
	}
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
