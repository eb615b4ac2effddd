package propagate

import (
	"testing"
	"time"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestNextPass(t *testing.T) {
	res := func(reason v1alpha1.PropagationReason) result {
		return result{status: v1alpha1.ClusterPropagationStatus{Cluster: "m", Reason: reason}}
	}
	pending := res(v1alpha1.PropagationPending)
	pending.pending = true
	soon := time.Now().Add(5 * time.Second)
	tests := []struct {
		name      string
		results   []result
		waitUntil time.Time
		min, max  time.Duration
	}{
		{name: "all OK", results: []result{res(v1alpha1.PropagationOK)}},
		{name: "session starting", results: []result{res(v1alpha1.PropagationApplyFailed), pending}, min: time.Second, max: time.Second},
		{name: "failure", results: []result{res(v1alpha1.PropagationOK), res(v1alpha1.PropagationApplyFailed)}, min: retryAfter, max: retryAfter},
		{name: "deleting", results: []result{res(v1alpha1.PropagationDeleting)}, min: retryAfter, max: retryAfter},
		{name: "conflict", results: []result{res(v1alpha1.PropagationConflict)}, min: conflictRetryAfter, max: conflictRetryAfter},
		{name: "waiting for replacements", results: []result{res(v1alpha1.PropagationApplyFailed)}, waitUntil: soon, min: 5 * time.Second, max: 6 * time.Second},
		{name: "replacements far off", results: []result{res(v1alpha1.PropagationOK)}, waitUntil: time.Now().Add(time.Hour), min: evictionRecheck, max: evictionRecheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextPass(tc.results, tc.waitUntil).RequeueAfter
			if got < tc.min || got > tc.max {
				t.Errorf("RequeueAfter %s, want between %s and %s", got, tc.min, tc.max)
			}
		})
	}
}
