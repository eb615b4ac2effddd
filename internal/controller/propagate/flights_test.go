package propagate

import (
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

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
}
