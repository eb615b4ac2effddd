package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/scheduler/nodefit"
)

// FuzzLedger drives two ledgers through the same operations: one looked
// at with a member state version that changes only when bound counts
// change (its running totals are reused), one recounted at every look.
// They must always report the same reservations.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{3, 3, 3, 0, 9, 1, 4, 4, 2, 8, 7, 6, 5, 200, 17, 33, 1, 0, 250})
	f.Fuzz(func(t *testing.T, ops []byte) {
		now := time.Unix(0, 0)
		clock := func() time.Time { return now }
		fast := &Ledger{Timeout: 10 * time.Second, Now: clock}
		slow := &Ledger{Timeout: 10 * time.Second, Now: clock}
		clusters := []string{"m1", "m2"}
		workloads := []string{"a", "b", "c"}
		bound := map[string]map[string]int32{"m1": {}, "m2": {}}
		version := map[string]uint64{"m1": 1, "m2": 1}
		fresh := uint64(1 << 32)
		per := PerReplica([]nodefit.Request{{Name: "cpu", Amount: 500}})
		var undos []func()
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%6, int(ops[i+1])
			c := clusters[arg%2]
			w := workloads[arg/2%3]
			switch op {
			case 0, 1: // a decision
				p := map[string]Count{c: {Replicas: int64(arg % 5), Fresh: arg%5 != 1, Keep: arg%11 == 3}}
				if arg%7 == 0 {
					p[clusters[(arg+1)%2]] = Count{Replicas: int64(arg % 3), Fresh: true}
				}
				p1, p2 := map[string]Count{}, map[string]Count{}
				for cl, n := range p {
					p1[cl], p2[cl] = n, n
					if arg%3 != 0 {
						// What the decision saw: the fast ledger at the
						// member's version, the slow one at its own.
						p1[cl] = Count{Replicas: n.Replicas, Fresh: n.Fresh, Keep: n.Keep, Observed: Observed{Known: true, Bound: bound[cl][w], Version: version[cl]}}
					}
				}
				u1 := fast.Reserve(w, per, p1)
				u2 := slow.Reserve(w, per, p2)
				undos = append(undos, func() { u1(); u2() })
			case 2: // pods bound or gone
				bound[c][w] = max(bound[c][w]+int32(arg%3)-1, 0)
				version[c]++
			case 3:
				if len(undos) > 0 && arg%2 == 0 {
					undos[len(undos)-1]()
					undos = undos[:len(undos)-1]
				}
			case 4:
				fast.Forget(w)
				slow.Forget(w)
			case 5:
				now = now.Add(time.Duration(arg%8) * time.Second)
			}
			for _, cl := range clusters {
				for _, except := range append([]string{""}, workloads...) {
					lookup := func(w string) int32 { return bound[cl][w] }
					fresh++
					v1, n1 := fast.Reserved(cl, except, lookup, version[cl])
					v2, n2 := slow.Reserved(cl, except, lookup, fresh)
					if n1 != n2 || v1.CPU != v2.CPU || v1.Pods != v2.Pods {
						t.Fatalf("op %d: %s without %q: running totals %d (%s), recounted %d (%s)", i/2, cl, except, n1, show(v1), n2, show(v2))
					}
					if n1 < 0 {
						t.Fatalf("negative reservation %d", n1)
					}
				}
			}
		}
	})
}

func show(v nodefit.Vector) string { return fmt.Sprintf("cpu %d pods %d", v.CPU, v.Pods) }
