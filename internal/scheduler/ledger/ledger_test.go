package ledger

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

type clock struct{ t time.Time }

// Placement is a decision's replicas per cluster.
type Placement map[string]int64

// fresh makes every count of p new in the decision, with the bound counts
// seen at version 7 where bound has the cluster (unknown elsewhere).
func fresh(p Placement, bound map[string]int32) map[string]Count {
	out := map[string]Count{}
	for c, n := range p {
		out[c] = Count{Replicas: n, Fresh: true}
		if b, ok := bound[c]; ok {
			out[c] = Count{Replicas: n, Fresh: true, Observed: Observed{Known: true, Bound: b, Version: 7}}
		}
	}
	return out
}

func (c *clock) now() time.Time { return c.t }

var oneCPU = PerReplica([]nodefit.Request{{Name: corev1.ResourceCPU, Amount: 1000}})

func TestReserved(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := &Ledger{Timeout: time.Minute, Now: c.now}
	bound := map[string]int32{}
	lookup := func(w string) int32 { return bound[w] }
	version := uint64(1) // changes with bound

	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 3, "m2": 2}, nil))
	l.Reserve("ns/b", oneCPU, fresh(Placement{"m1": 4}, nil))
	v, n := l.Reserved("m1", "", lookup, version)
	if n != 7 || v.CPU != 7000 || v.Pods != 7*nodefit.PodAmount {
		t.Fatalf("m1 reserves %d replicas, %+v; want 7 replicas, 7 cpus, 7 pod slots", n, v)
	}
	// A decision does not count its own reservation against itself.
	if _, n := l.Reserved("m1", "ns/a", lookup, version); n != 4 {
		t.Errorf("m1 without ns/a reserves %d, want 4", n)
	}
	// Pods bound in the member end their share.
	bound["ns/a"] = 2
	version++
	if _, n := l.Reserved("m1", "", lookup, version); n != 1+4 {
		t.Errorf("with 2 of ns/a bound m1 reserves %d, want 5", n)
	}
	bound["ns/a"] = 3
	version++
	if _, n := l.Reserved("m1", "", lookup, version); n != 4 {
		t.Errorf("with ns/a all bound m1 reserves %d, want 4", n)
	}
	// A new decision for b replaces its reservation; m2's a stays.
	l.Reserve("ns/b", oneCPU, fresh(Placement{"m2": 1}, nil))
	if _, n := l.Reserved("m1", "", lookup, version); n != 0 {
		t.Errorf("after b left m1, m1 reserves %d, want 0", n)
	}
	if _, n := l.Reserved("m2", "", lookup, version); n != 1 {
		// bound counts are per cluster in reality; here the lookup says
		// 3 of a are bound, so only b's 1 is outstanding.
		t.Errorf("m2 reserves %d, want 1", n)
	}
	// Timeouts release the rest.
	c.t = c.t.Add(2 * time.Minute)
	if _, n := l.Reserved("m2", "", lookup, version); n != 0 {
		t.Errorf("after the timeout m2 reserves %d, want 0", n)
	}
	if got := l.Totals(); got["m1"].Replicas != 0 || got["m2"].Replicas != 0 {
		t.Errorf("totals after everything ended: %+v", got)
	}
}

func TestReserveUndo(t *testing.T) {
	l := &Ledger{}
	none := func(string) int32 { return 0 }
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 2}, nil))
	undo := l.Reserve("ns/a", oneCPU, fresh(Placement{"m2": 5}, nil))
	undo()
	if _, n := l.Reserved("m1", "", none, 1); n != 2 {
		t.Errorf("after undo m1 reserves %d, want the 2 from before", n)
	}
	if _, n := l.Reserved("m2", "", none, 1); n != 0 {
		t.Errorf("after undo m2 reserves %d, want 0", n)
	}
	if n, ok := l.Recorded("ns/a", "m1"); !ok || n != 2 {
		t.Errorf("after undo ns/a's record in m1 is %d (%v), want the 2 from before", n, ok)
	}
	if _, ok := l.Recorded("ns/a", "m2"); ok {
		t.Errorf("after undo ns/a is still recorded in m2")
	}
	undo = l.Reserve("ns/new", oneCPU, fresh(Placement{"m1": 1}, nil))
	if n, ok := l.Recorded("ns/new", "m1"); !ok || n != 1 {
		t.Errorf("a reserved workload is recorded as %d (%v), want 1", n, ok)
	}
	undo()
	if _, ok := l.Recorded("ns/new", "m1"); ok {
		t.Errorf("an undone first reservation leaves the workload recorded")
	}
}

// A decision without a view of a member (Keep) leaves the workload's
// reservation there as it was, and its record if the count is the one
// recorded (one changed out of view is unrecorded, to be restored when
// the view returns); one that leaves the member out ends the reservation
// and records that it left.
func TestKeepLeavesAMemberAsItWas(t *testing.T) {
	l := &Ledger{}
	none := func(string) int32 { return 0 }
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 3, "m2": 2}, nil))
	l.Reserve("ns/a", oneCPU, map[string]Count{"m1": {Replicas: 3, Keep: true}, "m2": {Replicas: 2}})
	if _, n := l.Reserved("m1", "", none, 1); n != 3 {
		t.Errorf("m1, not viewed by the decision, reserves %d, want the 3 from before", n)
	}
	if n, ok := l.Recorded("ns/a", "m1"); !ok || n != 3 {
		t.Errorf("m1's record is %d (%v), want 3", n, ok)
	}
	l.Reserve("ns/a", oneCPU, map[string]Count{"m1": {Replicas: 5, Keep: true}, "m2": {Replicas: 2}})
	if _, n := l.Reserved("m1", "", none, 1); n != 3 {
		t.Errorf("m1, scaled out of view, reserves %d, want the 3 from before", n)
	}
	if n, ok := l.Recorded("ns/a", "m1"); ok {
		t.Errorf("m1, scaled out of view, is recorded as %d; want it unrecorded", n)
	}
	l.Reserve("ns/a", oneCPU, map[string]Count{"m2": {Replicas: 2}})
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 4, "m2": 2}, nil))
	l.Reserve("ns/a", oneCPU, map[string]Count{"m2": {Replicas: 2}})
	if _, n := l.Reserved("m1", "", none, 1); n != 0 {
		t.Errorf("m1, left out, still reserves %d", n)
	}
	if n, ok := l.Recorded("ns/a", "m1"); !ok || n != Left {
		t.Errorf("m1, left out, is recorded as %d (%v), want Left", n, ok)
	}
	// A workload never recorded in a member it is not viewed in stays
	// unrecorded there (it is restored once the view comes).
	l.Reserve("ns/b", oneCPU, map[string]Count{"m3": {Replicas: 1, Keep: true}})
	if _, ok := l.Recorded("ns/b", "m3"); ok {
		t.Errorf("a count kept without a view was recorded")
	}
}

// A decision that keeps the count in force but with another per-replica
// vector (a new pod template) holds the new requests until the old
// deadline.
func TestNewVectorKeepsDeadline(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	l := &Ledger{Timeout: time.Minute, Now: c.now}
	none := func(string) int32 { return 0 }
	twoCPU := PerReplica([]nodefit.Request{{Name: corev1.ResourceCPU, Amount: 2000}})
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 2}, nil))
	c.t = c.t.Add(40 * time.Second)
	l.Reserve("ns/a", twoCPU, map[string]Count{"m1": {Replicas: 2}})
	if v, n := l.Reserved("m1", "", none, 1); n != 2 || v.CPU != 4000 {
		t.Errorf("after the new vector m1 reserves %d replicas, %d mcpu; want 2, 4000", n, v.CPU)
	}
	c.t = c.t.Add(30 * time.Second)
	if _, n := l.Reserved("m1", "", none, 1); n != 0 {
		t.Errorf("the new vector extended the deadline: %d still reserved", n)
	}
}

// Reservations of absurd sizes saturate instead of overflowing into
// negative (free) room, and adding then removing them leaves the total
// exact.
func TestHugeReservationsDoNotOverflow(t *testing.T) {
	l := &Ledger{}
	none := func(string) int32 { return 0 }
	huge := PerReplica([]nodefit.Request{{Name: corev1.ResourceMemory, Amount: nodefit.MaxAmount}})
	l.Reserve("ns/small", oneCPU, fresh(Placement{"m1": 2}, nil))
	l.Reserve("ns/huge", huge, fresh(Placement{"m1": 1 << 31}, nil))
	v, n := l.Reserved("m1", "", none, 1)
	if v.Memory != maxHeld || v.CPU != 2000 || n != 2+1<<31 {
		t.Errorf("with a huge reservation m1 holds %d bytes, %d mcpu, %d replicas; want %d, 2000, %d", v.Memory, v.CPU, n, maxHeld, 2+1<<31)
	}
	l.Forget("ns/huge")
	if v, n := l.Reserved("m1", "", none, 2); v.Memory != 0 || v.CPU != 2000 || n != 2 {
		t.Errorf("after the huge one went m1 holds %d bytes, %d mcpu, %d replicas; want 0, 2000, 2", v.Memory, v.CPU, n)
	}
	for _, tt := range []struct{ v, n, want int64 }{
		{3, 4, 12}, {-3, 4, -12}, {3, -4, -12}, {0, 1 << 62, 0},
		{maxHeld, 2, maxHeld}, {-maxHeld, 2, -maxHeld}, {1 << 40, 1 << 40, maxHeld}, {1 << 62, -(1 << 62), -maxHeld},
	} {
		if got := scaled(tt.v, tt.n); got != tt.want {
			t.Errorf("scaled(%d, %d) = %d, want %d", tt.v, tt.n, got, tt.want)
		}
	}
}

func TestUnchangedCountKeepsDeadline(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	l := &Ledger{Timeout: time.Minute, Now: c.now}
	none := func(string) int32 { return 0 }
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 2}, nil))
	c.t = c.t.Add(50 * time.Second)
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 2, "m2": 1}, nil))
	c.t = c.t.Add(20 * time.Second)
	if _, n := l.Reserved("m1", "", none, 1); n != 0 {
		t.Errorf("m1's unchanged reservation was extended: %d still reserved", n)
	}
	if _, n := l.Reserved("m2", "", none, 1); n != 1 {
		t.Errorf("m2's new reservation ended early: %d reserved", n)
	}
}

func TestDisplacedAndResourceList(t *testing.T) {
	s := nodefit.NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	}}}}})
	// The member holds 10 such replicas, with 500 pod slots free.
	res := nodefit.Result{Replicas: 10, FreePods: 500}
	tests := []struct {
		name     string
		reserved nodefit.Vector
		want     int64
	}{
		{"nothing", nodefit.Vector{}, 0},
		{"cpu rounds up", nodefit.Vector{CPU: 2500}, 2},
		{"memory dominates", nodefit.Vector{CPU: 1000, Memory: 3 << 30}, 3},
		{"many small pods: slots are not the limit", nodefit.Vector{CPU: 4000, Pods: 400 * nodefit.PodAmount}, 2},
		{"slots are the limit", nodefit.Vector{Pods: 495 * nodefit.PodAmount}, 5},
	}
	for _, tt := range tests {
		if got := Displaced(tt.reserved, res, s); got != tt.want {
			t.Errorf("%s: Displaced = %d, want %d", tt.name, got, tt.want)
		}
	}
	list := Total{Replicas: 3, Resources: nodefit.Vector{CPU: 3000, Memory: 3 << 30, Pods: 3 * nodefit.PodAmount}}.ResourceList()
	if q := list[corev1.ResourceCPU]; q.String() != "3" {
		t.Errorf("cpu = %s", q.String())
	}
	if q := list[corev1.ResourcePods]; q.String() != "3" {
		t.Errorf("pods = %s", q.String())
	}
	if (Total{}).ResourceList() != nil {
		t.Errorf("no reservations give a list")
	}
}

// TestRunningTotal checks that looks at an unchanged member reuse the total
// (no bound lookups) and that reservations with known bound counts keep it
// right without a recount.
func TestRunningTotal(t *testing.T) {
	l := &Ledger{}
	lookups := 0
	bound := func(w string) int32 {
		lookups++
		return map[string]int32{"ns/a": 1}[w]
	}
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 3}, map[string]int32{"m1": 1}))
	if _, n := l.Reserved("m1", "", bound, 7); n != 2 || lookups != 1 {
		// The first look at the cluster counts (version 7 is new).
		t.Fatalf("first look: %d reserved after %d lookups, want 2 after 1", n, lookups)
	}
	lookups = 0
	l.Reserve("ns/b", oneCPU, fresh(Placement{"m1": 4}, map[string]int32{"m1": 0}))
	if v, n := l.Reserved("m1", "ns/b", bound, 7); n != 2 || v.CPU != 2000 || lookups != 0 {
		t.Errorf("unchanged member: %d reserved (%d mcpu) after %d lookups, want 2 (2000) after none", n, v.CPU, lookups)
	}
	if _, n := l.Reserved("m1", "", bound, 7); n != 6 {
		t.Errorf("everyone's: %d, want 6", n)
	}
	l.Reserve("ns/b", oneCPU, fresh(Placement{"m1": 4}, nil)) // unknown bound: counted at the next look
	if _, n := l.Reserved("m1", "", bound, 7); n != 6 {
		t.Errorf("after an unchanged decision: %d, want 6", n)
	}
	l.Reserve("ns/b", oneCPU, fresh(Placement{"m1": 5}, nil))
	lookups = 0
	if _, n := l.Reserved("m1", "", bound, 7); n != 7 || lookups == 0 {
		t.Errorf("after a decision with an unknown bound count: %d after %d lookups, want 7 after a recount", n, lookups)
	}
}

// TestEndedReservationNotRestarted checks that a decision keeping the
// count in force does not start a reservation that timed out again.
func TestEndedReservationNotRestarted(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	l := &Ledger{Timeout: time.Minute, Now: c.now}
	none := func(string) int32 { return 0 }
	l.Reserve("ns/a", oneCPU, fresh(Placement{"m1": 2}, nil))
	c.t = c.t.Add(2 * time.Minute)
	if _, n := l.Reserved("m1", "", none, 1); n != 0 {
		t.Fatalf("after the timeout %d reserved", n)
	}
	l.Reserve("ns/a", oneCPU, map[string]Count{"m1": {Replicas: 2}}) // the same count, not fresh
	if _, n := l.Reserved("m1", "", none, 1); n != 0 {
		t.Errorf("an unchanged decision started the ended reservation again: %d", n)
	}
	l.Reserve("ns/a", oneCPU, map[string]Count{"m1": {Replicas: 3, Fresh: true}})
	if _, n := l.Reserved("m1", "", none, 1); n != 3 {
		t.Errorf("a new count reserves %d, want 3", n)
	}
}
