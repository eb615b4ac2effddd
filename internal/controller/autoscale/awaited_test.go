package autoscale

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The wait for pull members' reports counts from the first time a
// take-over waited, not from the HPA's creation: an HPA created long ago
// (one a policy propagated until now) waits a whole awaitReports. A new
// HPA of the same name, or one a policy propagated in between, starts
// again.
func TestAwaitedCountsFromTheFirstWait(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	old := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "web", UID: "1", CreationTimestamp: metav1.NewTime(now.Add(-24 * time.Hour)),
	}}
	steps := []struct {
		step    string
		advance time.Duration
		do      func()
		want    time.Duration
	}{
		{"first wait of an HPA a day old", 0, nil, 0},
		{"20 s later", 20 * time.Second, nil, 20 * time.Second},
		{"a new HPA of the same name", 5 * time.Second, func() { old.UID = "2" }, 0},
		{"later", time.Minute, nil, time.Minute},
		{"after a policy propagated it", time.Second, func() { r.forget(types.NamespacedName{Namespace: "ns", Name: "web"}) }, 0},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.do != nil {
			s.do()
		}
		if got := r.awaited(old); got != s.want {
			t.Errorf("%s: awaited %s, want %s", s.step, got, s.want)
		}
	}
	if got := r.awaited(old); got >= awaitReports {
		t.Errorf("an HPA created a day ago is past the wait at once (%s)", got)
	}
}
