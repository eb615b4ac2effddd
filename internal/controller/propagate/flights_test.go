package propagate

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestFlights(t *testing.T) {
	var f flights
	k := flightKey{fo: types.NamespacedName{Namespace: "ns", Name: "web.deployment.apps"}, cluster: "member-1"}
	ok := result{status: v1alpha1.ClusterPropagationStatus{Cluster: "member-1", Reason: v1alpha1.PropagationOK}}

	// A fast job answers at once.
	if res, done := f.run(k, "a", time.Second, func() result { return ok }, func() { t.Error("woken for a job that answered in time") }); !done || res.status.Reason != v1alpha1.PropagationOK {
		t.Fatalf("fast job: %+v, %v", res, done)
	}

	// A slow job detaches and wakes when it ends; meanwhile no second job
	// starts for the key.
	release := make(chan struct{})
	woken := make(chan struct{})
	var started atomic.Int32
	slow := func() result { started.Add(1); <-release; return ok }
	if _, done := f.run(k, "b", 10*time.Millisecond, slow, func() { close(woken) }); done {
		t.Fatal("slow job reported done")
	}
	if _, done := f.run(k, "b", 10*time.Millisecond, slow, func() {}); done {
		t.Fatal("second run while the first is in flight reported done")
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d jobs started while one was in flight, want 1", n)
	}
	close(release)
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken after the slow job ended")
	}
	// Its result is collected without running again when the intent holds.
	res, done := f.run(k, "b", time.Second, func() result { t.Error("ran again although the finished result holds"); return result{} }, func() {})
	if !done || res.status.Reason != v1alpha1.PropagationOK {
		t.Fatalf("collect: %+v, %v", res, done)
	}

	// A finished result for a stale intent is dropped and the job runs anew.
	gate := make(chan struct{})
	if _, done := f.run(k, "c", 10*time.Millisecond, func() result { <-gate; return ok }, func() {}); done {
		t.Fatal("slow job reported done")
	}
	f.mu.Lock()
	fl := f.m[k]
	f.mu.Unlock()
	close(gate)
	select {
	case <-fl.done:
	case <-time.After(5 * time.Second):
		t.Fatal("job did not end")
	}
	var ran bool
	if _, done := f.run(k, "d", time.Second, func() result { ran = true; return ok }, func() {}); !done || !ran {
		t.Fatalf("stale result reused: done %v, ran %v", done, ran)
	}

	// A finished Pending result (a pull member's agent has not reported
	// yet) is not reused, even for the same intent: the report may have
	// come while the job ran, and its event is the run collecting the
	// result. The job runs again and its answer counts.
	pending := result{status: v1alpha1.ClusterPropagationStatus{Cluster: "member-1", Reason: v1alpha1.PropagationPending, Message: "handed to the cluster's agent; waiting for it to report"}}
	gate = make(chan struct{})
	if _, done := f.run(k, "e", 10*time.Millisecond, func() result { <-gate; return pending }, func() {}); done {
		t.Fatal("slow job reported done")
	}
	f.mu.Lock()
	fl = f.m[k]
	f.mu.Unlock()
	close(gate)
	select {
	case <-fl.done:
	case <-time.After(5 * time.Second):
		t.Fatal("job did not end")
	}
	res, done = f.run(k, "e", time.Second, func() result { return ok }, func() {})
	if !done || res.status.Reason != v1alpha1.PropagationOK {
		t.Fatalf("a finished Pending result was reused: %+v, %v", res, done)
	}
}

func TestFlightPanicIsAFailedResult(t *testing.T) {
	k := flightKey{fo: types.NamespacedName{Namespace: "ns", Name: "web.deployment.apps"}, cluster: "member-1"}
	for _, detached := range []bool{false, true} {
		t.Run(fmt.Sprintf("detached=%v", detached), func(t *testing.T) {
			var f flights
			before := recoveredPanics(t)
			gate := make(chan struct{})
			woken := make(chan struct{}, 1)
			job := func() result {
				<-gate
				var m map[string]int
				m["boom"]++ // a bug in a write: assignment to entry in nil map
				return result{}
			}
			wait := time.Minute
			if detached {
				wait = 10 * time.Millisecond // the reconcile stops waiting before the panic
			} else {
				close(gate)
			}
			res, done := f.run(k, "a", wait, job, func() { woken <- struct{}{} })
			if detached {
				if done {
					t.Fatal("the flight ended before its gate opened")
				}
				close(gate)
				select {
				case <-woken:
				case <-time.After(5 * time.Second):
					t.Fatal("the detached flight that panicked never woke its FederatedObject")
				}
				res, done = f.run(k, "a", time.Second, func() result { t.Error("ran again before the failed result was collected"); return result{} }, func() {})
			}
			if !done {
				t.Fatal("no result for the flight that panicked")
			}
			if res.status.Cluster != "member-1" || res.status.Reason != v1alpha1.PropagationApplyFailed || !strings.Contains(res.status.Message, "panicked") || !strings.Contains(res.status.Message, "nil map") {
				t.Errorf("result %+v, want ApplyFailed for member-1 saying the write panicked", res.status)
			}
			if got := recoveredPanics(t) - before; got != 1 {
				t.Errorf("flotilla_recovered_panics_total{component=propagate} grew by %v, want 1", got)
			}
			// The next pass writes again.
			var ran bool
			ok := result{status: v1alpha1.ClusterPropagationStatus{Cluster: "member-1", Reason: v1alpha1.PropagationOK}}
			if res, done := f.run(k, "a", time.Second, func() result { ran = true; return ok }, func() {}); !done || !ran || res.status.Reason != v1alpha1.PropagationOK {
				t.Errorf("retry after the panic: ran %v, done %v, %+v", ran, done, res.status)
			}
		})
	}
}

// recoveredPanics reads flotilla_recovered_panics_total{component="propagate"}
// from the controller-runtime registry the controller-manager serves.
func recoveredPanics(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "flotilla_recovered_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "component" && l.GetValue() == Name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// A panic in one cluster's part of a pass becomes that cluster's
// ApplyFailed result; the other clusters' results stand (before, the
// panic in runAll's goroutine crashed the controller-manager).
func TestRunAllRecoversAPanickingCluster(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	ok := v1alpha1.ClusterPropagationStatus{Cluster: "b", Reason: v1alpha1.PropagationOK}
	got := runAll(key, []clusterJob{
		{"a", func() result { panic("boom") }},
		{"b", func() result { return result{status: ok} }},
	})
	if len(got) != 2 {
		t.Fatalf("%d results, want 2", len(got))
	}
	if st := got[0].status; st.Cluster != "a" || st.Reason != v1alpha1.PropagationApplyFailed || !strings.Contains(st.Message, "panicked: boom") {
		t.Errorf("panicking cluster: %+v, want ApplyFailed naming the panic", st)
	}
	if got[1].status != ok {
		t.Errorf("other cluster: %+v, want %+v", got[1].status, ok)
	}
}
