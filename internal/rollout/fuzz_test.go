package rollout

import (
	"fmt"
	"testing"
	"time"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// FuzzPlan checks the plan's promises on arbitrary members and previous
// plans: the shares of the clusters rolling never sum to more than the
// budget (when the previous plan's did not), a cluster that keeps rolling
// keeps its share, no share exceeds what a cluster can use, and every
// member has exactly one entry, in name order.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{3, 3, 10, 1, 10, 1, 10, 1}, false)
	f.Add([]byte{0, 1, 10, 2, 0, 3, 5, 0, 7, 9}, true)
	f.Fuzz(func(t *testing.T, data []byte, frozen bool) {
		if len(data) < 2 {
			return
		}
		budget := Budget{Surge: int32(data[0] % 16), Unavailable: int32(data[1] % 16)}
		prev := &v1alpha1.RolloutStatus{Revision: "r1"}
		var members []Member
		used := Budget{}
		for i := 2; i+1 < len(data) && len(members) < 12; i += 2 {
			n, flags := int32(data[i]%40), data[i+1]
			m := Member{Cluster: fmt.Sprintf("m%02d", len(members)), Replicas: n, Usable: flags&1 == 0, HasCopy: flags&2 == 0,
				Revision: "r2", Observed: flags&4 == 0, SpecReplicas: n, Total: n + int32(flags>>6), Updated: n / int32(1+flags>>5&1), Available: n - int32(flags>>4&3)}
			if flags&8 != 0 {
				m.Revision = "r1"
			}
			c := v1alpha1.ClusterRollout{Cluster: m.Cluster}
			switch flags >> 3 & 3 {
			case 0:
				c.State = v1alpha1.RolloutDone
			case 1:
				c.State, c.Readmit = v1alpha1.RolloutWaiting, flags&0x40 != 0
			case 2:
				c.State = v1alpha1.RolloutStalled
			case 3:
				// A rolling share within what is left of the budget.
				c.State = v1alpha1.RolloutRolling
				c.MaxSurge = min(budget.Surge-used.Surge, int32(flags>>5&1))
				c.MaxUnavailable = min(budget.Unavailable-used.Unavailable, 1)
				used.Surge += c.MaxSurge
				used.Unavailable += c.MaxUnavailable
			}
			prev.Clusters = append(prev.Clusters, c)
			members = append(members, m)
		}
		if data[0]&0x80 != 0 {
			prev.Revision = "r2"
		}
		in := Input{Revision: "r2", Budget: budget, Previous: prev, Members: members, Frozen: frozen, Now: time.Unix(1000, 0), StallAfter: time.Minute}
		if data[1]&0x80 != 0 {
			in.Stages = []Stage{{Name: "a", After: v1alpha1.GateApproval}, {Name: "b", After: v1alpha1.GatePause, Pause: time.Minute, MinAvailablePercent: 50}, {Name: "c"}}
		}
		out := Plan(in)
		if len(out.Clusters) != len(members) {
			t.Fatalf("%d entries for %d members", len(out.Clusters), len(members))
		}
		var sum Budget
		for i, c := range out.Clusters {
			if c.Cluster != members[i].Cluster {
				t.Fatalf("entry %d is %s, want %s (name order)", i, c.Cluster, members[i].Cluster)
			}
			if c.State != v1alpha1.RolloutRolling && c.State != v1alpha1.RolloutDone && c.MaxSurge+c.MaxUnavailable != 0 {
				t.Errorf("%s is %s with a share %d/%d", c.Cluster, c.State, c.MaxSurge, c.MaxUnavailable)
			}
			p := prev.Clusters[i]
			if p.State == v1alpha1.RolloutRolling && p.MaxSurge+p.MaxUnavailable > 0 && c.State == v1alpha1.RolloutRolling && (p.MaxSurge != c.MaxSurge || p.MaxUnavailable != c.MaxUnavailable) {
				t.Errorf("%s kept rolling with its share changed from %d/%d to %d/%d", c.Cluster, p.MaxSurge, p.MaxUnavailable, c.MaxSurge, c.MaxUnavailable)
			}
			if (p.State != v1alpha1.RolloutRolling || p.MaxSurge+p.MaxUnavailable == 0) && c.State == v1alpha1.RolloutRolling && c.MaxSurge+c.MaxUnavailable > 0 {
				if frozen || out.Halted != "" || out.Gate != "" {
					t.Errorf("%s admitted while the host is paused, the rollout halted or at a gate (%q %q)", c.Cluster, out.Halted, out.Gate)
				}
				if in.Stages != nil && in.Stages[members[i].Stage].Name != out.Stage {
					t.Errorf("%s of stage %s admitted while the rollout is at stage %s", c.Cluster, in.Stages[members[i].Stage].Name, out.Stage)
				}
				if c.MaxSurge > max(members[i].Replicas, 1) || c.MaxUnavailable > max(members[i].Replicas, 1) {
					t.Errorf("%s of %d replicas admitted with %d/%d", c.Cluster, members[i].Replicas, c.MaxSurge, c.MaxUnavailable)
				}
			}
			if c.State == v1alpha1.RolloutRolling && c.MaxSurge+c.MaxUnavailable == 0 && p.State != v1alpha1.RolloutRolling && !members[i].Usable {
				t.Errorf("%s, whose copy is unknown, released without a share (was %s)", c.Cluster, p.State)
			}
			if p.State == v1alpha1.RolloutWaiting && p.Readmit && c.State != v1alpha1.RolloutWaiting && c.MaxSurge+c.MaxUnavailable == 0 && c.State != v1alpha1.RolloutStalled {
				t.Errorf("%s, waiting to be readmitted, became %s without a share", c.Cluster, c.State)
			}
			if c.State == v1alpha1.RolloutRolling {
				sum.Surge += c.MaxSurge
				sum.Unavailable += c.MaxUnavailable
			}
		}
		if sum.Surge > budget.Surge || sum.Unavailable > budget.Unavailable {
			t.Errorf("shares sum to %d/%d, over the budget %d/%d: %s", sum.Surge, sum.Unavailable, budget.Surge, budget.Unavailable, describe(out))
		}
	})
}
