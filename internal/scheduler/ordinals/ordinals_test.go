package ordinals

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// parse reads "a=2@0 b=2@2" (cluster=replicas@start; "@start" optional).
func parse(s string) []v1alpha1.ClusterPlacement {
	var out []v1alpha1.ClusterPlacement
	for _, f := range strings.Fields(s) {
		p := v1alpha1.ClusterPlacement{}
		name, rest, _ := strings.Cut(f, "=")
		p.Cluster = name
		n, start, hasStart := strings.Cut(rest, "@")
		var r, st int32
		fmt.Sscan(n, &r)
		p.Replicas = ptr.To(r)
		if hasStart {
			fmt.Sscan(start, &st)
			p.OrdinalStart = ptr.To(st)
		}
		out = append(out, p)
	}
	return out
}

func format(ps []v1alpha1.ClusterPlacement) string {
	var parts []string
	for _, p := range ps {
		s := p.Cluster + "="
		if p.Replicas != nil {
			s += fmt.Sprint(*p.Replicas)
		}
		if p.OrdinalStart != nil {
			s += fmt.Sprintf("@%d", *p.OrdinalStart)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestAssign(t *testing.T) {
	cases := []struct {
		name       string
		prev, next string
		base       int32
		want       string
	}{
		{"first placement: the scheduler's counts in name order", "", "c=2 a=2 b=2", 0, "a=2@0 b=2@2 c=2@4"},
		{"first placement from a base", "", "a=1 b=2", 10, "a=1@10 b=2@11"},
		{"unchanged", "a=2@0 b=2@2 c=2@4", "a=2 b=2 c=2", 0, "a=2@0 b=2@2 c=2@4"},
		{"the scheduler's rebalancing does not move identities", "a=2@0 b=2@2 c=2@4", "a=1 b=3 c=2", 0, "a=2@0 b=2@2 c=2@4"},
		{"scale-up appends to the last range", "a=2@0 b=2@2 c=2@4", "a=3 b=3 c=2", 0, "a=2@0 b=2@2 c=4@4"},
		{"scale-down removes the highest ordinals", "a=2@0 b=2@2 c=4@4", "a=2 b=1 c=1", 0, "a=2@0 b=2@2 c=0@4"},
		{"scale-down through several ranges", "a=2@0 b=2@2 c=2@4", "a=1 b=0 c=0", 0, "a=1@0 b=0@1 c=0@1"},
		{"then a scale-up grows the last range again", "a=1@0 b=0@1 c=0@1", "a=1 b=1 c=1", 0, "a=1@0 b=0@1 c=2@1"},
		{"a middle cluster leaves: the range before takes its ordinals", "a=2@0 b=2@2 c=2@4", "a=3 c=3", 0, "a=4@0 c=2@4"},
		{"the first cluster leaves: the next range takes its ordinals", "a=2@0 b=2@2 c=2@4", "b=3 c=3", 0, "b=4@0 c=2@4"},
		{"the last cluster leaves", "a=2@0 b=2@2 c=2@4", "a=3 b=3", 0, "a=2@0 b=4@2"},
		{"two neighbours leave", "a=2@0 b=2@2 c=2@4 d=2@6", "a=4 d=4", 0, "a=6@0 d=2@6"},
		{"a joining cluster is appended and takes the growth", "a=2@0 b=2@2", "a=2 b=2 c=2", 0, "a=2@0 b=2@2 c=2@4"},
		{"a joining cluster without growth stays empty", "a=2@0 b=2@2", "a=1 b=2 c=1", 0, "a=2@0 b=2@2 c=0@4"},
		{"leave and join at once", "a=2@0 b=2@2 c=2@4", "a=2 c=2 d=2", 0, "a=4@0 c=2@4 d=0@6"},
		{"a new base shifts every range", "a=2@0 b=2@2", "a=2 b=2", 5, "a=2@5 b=2@7"},
		{"ranges that overlap are renumbered", "a=2@0 b=2@0", "a=2 b=2", 0, "a=2@0 b=2@2"},
		{"ranges with a gap are renumbered", "a=2@0 b=2@5", "a=2 b=2", 0, "a=2@0 b=2@2"},
		{"a placement from before ordinals is numbered", "a=2 b=2", "a=2 b=2", 0, "a=2@0 b=2@2"},
		{"no placed cluster left: numbered afresh", "a=2@0 b=2@2", "c=1 d=3", 0, "c=1@0 d=3@1"},
		{"zero replicas", "", "a=0 b=0", 0, "a=0@0 b=0@0"},
		{"scaled to 0 and up again: the scheduler's counts", "a=0@0 b=0@0 c=0@0", "a=2 b=2 c=2", 0, "a=2@0 b=2@2 c=2@4"},
		{"a cluster with a share of 0 that stays keeps an empty range", "a=1@0 b=1@1 c=1@2", "a=1 b=0 c=1", 0, "a=1@0 b=1@1 c=0@2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := format(Assign(parse(c.prev), parse(c.next), c.base))
			if got != c.want {
				t.Errorf("Assign(%q, %q, %d) = %q, want %q", c.prev, c.next, c.base, got, c.want)
			}
		})
	}
}

func TestAssignWithoutReplicasIsUnchanged(t *testing.T) {
	next := []v1alpha1.ClusterPlacement{{Cluster: "a"}, {Cluster: "b"}}
	if got := Assign(parse("a=1@0"), next, 0); format(got) != "a= b=" {
		t.Errorf("got %q", format(got))
	}
}

// checkChain fails unless out gives every cluster of next one range,
// the ranges are disjoint and together exactly [base, base+total).
func checkChain(t *testing.T, next, out []v1alpha1.ClusterPlacement, base int32) {
	t.Helper()
	var total int32
	want := map[string]bool{}
	for _, p := range next {
		total += *p.Replicas
		want[p.Cluster] = true
	}
	if len(out) != len(want) {
		t.Fatalf("%d entries for %d clusters: %s", len(out), len(want), format(out))
	}
	type rng struct{ start, count int32 }
	var rs []rng
	var sum int32
	for i, p := range out {
		if !want[p.Cluster] || p.Replicas == nil || p.OrdinalStart == nil || *p.Replicas < 0 {
			t.Fatalf("entry %s: %s", p.Cluster, format(out))
		}
		if i > 0 && out[i-1].Cluster >= p.Cluster {
			t.Fatalf("not sorted by cluster: %s", format(out))
		}
		rs = append(rs, rng{*p.OrdinalStart, *p.Replicas})
		sum += *p.Replicas
	}
	if sum != total {
		t.Fatalf("replicas %d, want %d: %s", sum, total, format(out))
	}
	sort.Slice(rs, func(i, j int) bool {
		return rs[i].start < rs[j].start || (rs[i].start == rs[j].start && rs[i].count < rs[j].count)
	})
	at := base
	for _, r := range rs {
		if r.start != at {
			t.Fatalf("ranges not contiguous from %d: %s", base, format(out))
		}
		at += r.count
	}
}

func FuzzAssign(f *testing.F) {
	f.Add([]byte{2, 2, 2}, []byte{3, 3, 2}, uint8(0), uint8(0b111))
	f.Add([]byte{1, 0, 4}, []byte{0, 5}, uint8(3), uint8(0b010))
	f.Fuzz(func(t *testing.T, prevCounts, nextCounts []byte, base uint8, mask uint8) {
		if len(prevCounts) > 8 || len(nextCounts) > 8 {
			return
		}
		names := "abcdefgh"
		var prev []v1alpha1.ClusterPlacement
		var at int32
		for i, c := range prevCounts {
			n := int32(c % 20)
			p := v1alpha1.ClusterPlacement{Cluster: string(names[i]), Replicas: ptr.To(n)}
			if mask&(1<<(i%8)) != 0 {
				p.OrdinalStart = ptr.To(at)
			}
			at += n
			prev = append(prev, p)
		}
		var next []v1alpha1.ClusterPlacement
		for i, c := range nextCounts {
			// Clusters shifted by the mask's low bits: some stay, some
			// leave, some join.
			j := (i + int(mask&3)) % len(names)
			dup := false
			for _, p := range next {
				dup = dup || p.Cluster == string(names[j])
			}
			if !dup {
				next = append(next, v1alpha1.ClusterPlacement{Cluster: string(names[j]), Replicas: ptr.To(int32(c % 20))})
			}
		}
		if len(next) == 0 {
			return
		}
		b := int32(base % 50)
		out := Assign(prev, next, b)
		checkChain(t, next, out, b)
		// Level-triggered: the result assigned again is itself.
		if again := Assign(out, out, b); format(again) != format(out) {
			t.Fatalf("not a fixed point: %s then %s", format(out), format(again))
		}
		// Identities stay: with the same clusters, every ordinal that
		// exists before and after stays in its cluster.
		if chainOf(prev) != nil {
			owner := func(ps []v1alpha1.ClusterPlacement, o int32) string {
				for _, p := range ps {
					if p.OrdinalStart != nil && o >= *p.OrdinalStart && o < *p.OrdinalStart+*p.Replicas {
						return p.Cluster
					}
				}
				return ""
			}
			same := len(prev) == len(out)
			for _, p := range prev {
				found := false
				for _, q := range out {
					found = found || q.Cluster == p.Cluster
				}
				same = same && found
			}
			if same && b == 0 {
				for o := int32(0); o < at; o++ {
					if was, now := owner(prev, o), owner(out, o); was != "" && now != "" && was != now {
						t.Fatalf("ordinal %d moved from %s to %s: %s -> %s", o, was, now, format(prev), format(out))
					}
				}
			}
		}
	})
}
