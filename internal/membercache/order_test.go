package membercache

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// TestPagesFollowTheOrder: every page size, namespace and selector pages
// through exactly what one unpaged, brute-force filtered and sorted walk
// of the cache gives; counts are given without a selector only; a watch
// from "now" starts with the same objects in the same order.
func TestPagesFollowTheOrder(t *testing.T) {
	c := newPodCache(t, 100)
	var all []*Entry
	for i := range 60 {
		cluster := []string{"m1", "m2", "m3"}[i%3]
		ns := fmt.Sprintf("ns%d", i%4) // the filters "ns" and "zz" sort before and after them all
		name := fmt.Sprintf("p%02d", (i*7)%20)
		app := []string{"web", "db"}[i%2]
		if err := c.Set(podsGR, cluster, pod(ns, name, "1", "Running", map[string]string{"app": app})); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.store(podsGR)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.objects {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *Entry) int { return a.compare(b.Namespace, b.Name, b.Cluster) })
	web, _ := labels.Parse("app=web")
	for _, f := range []Filter{{}, {Namespace: "ns0"}, {Namespace: "ns3"}, {Namespace: "ns"}, {Namespace: "zz"}, {Cluster: "m2"}, {Label: web}, {Namespace: "ns1", Label: web}} {
		var want []string
		for _, e := range all {
			if f.Matches(e) {
				want = append(want, e.Cluster+"/"+e.Namespace+"/"+e.Name)
			}
		}
		counted := f.Label == nil
		for _, limit := range []int64{0, 1, 2, 5, 7, 100} {
			t.Run(fmt.Sprintf("%s/limit-%d", filterName(f), limit), func(t *testing.T) {
				var got []string
				o := ListOptions{Filter: f, Limit: limit}
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatalf("no last page after %d pages", pages)
					}
					res, err := c.List(podsGR, o)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, names(res.Items)...)
					if res.Continue == "" {
						if res.Remaining != 0 {
							t.Errorf("last page says %d remain", res.Remaining)
						}
						break
					}
					left := int64(len(want) - len(got))
					if counted && res.Remaining != left {
						t.Errorf("page %d: remaining %d, want %d", pages, res.Remaining, left)
					}
					if !counted && res.Remaining != 0 {
						t.Errorf("page %d: remaining %d with a selector, want it unset", pages, res.Remaining)
					}
					o.Continue = res.Continue
				}
				if !slices.Equal(got, want) {
					t.Errorf("paged %v\nwant  %v", got, want)
				}
			})
		}
		w, err := c.Watch(podsGR, WatchOptions{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var backlog []string
		for _, ev := range w.Backlog {
			if ev.Type != watch.Added {
				t.Errorf("backlog event %s", ev.Type)
			}
			backlog = append(backlog, ev.Entry.Cluster+"/"+ev.Entry.Namespace+"/"+ev.Entry.Name)
		}
		w.Stop()
		if !slices.Equal(backlog, want) {
			t.Errorf("%s: watch backlog %v\nwant %v", filterName(f), backlog, want)
		}
	}
}

func filterName(f Filter) string {
	return fmt.Sprintf("ns=%q,cluster=%q,label=%v", f.Namespace, f.Cluster, f.Label)
}

// Pages after the first count what follows from the cache as it is then,
// less what was served: exact while nothing changes, an estimate of at
// least 1 while more pages follow when objects before the cursor went.
func TestRemainingAfterChanges(t *testing.T) {
	c := newPodCache(t, 100)
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := c.Set(podsGR, "m1", pod("ns", name, "1", "Running", nil)); err != nil {
			t.Fatal(err)
		}
	}
	page := func(o ListOptions) ListResult {
		t.Helper()
		res, err := c.List(podsGR, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, ns := range []string{"", "ns"} {
		p1 := page(ListOptions{Filter: Filter{Namespace: ns}, Limit: 2})
		if p1.Remaining != 4 {
			t.Errorf("namespace %q, first page: remaining %d, want 4", ns, p1.Remaining)
		}
		p2 := page(ListOptions{Filter: Filter{Namespace: ns}, Limit: 2, Continue: p1.Continue})
		if got := names(p2.Items); !slices.Equal(got, []string{"m1/ns/c", "m1/ns/d"}) || p2.Remaining != 2 {
			t.Errorf("namespace %q, second page: %v remaining %d, want [c d] and 2", ns, got, p2.Remaining)
		}
	}
	// a and b go after the first page: the count (2 objects less the 2
	// served) would say none follow, but e and f do.
	p1 := page(ListOptions{Limit: 2})
	for _, name := range []string{"a", "b"} {
		if err := c.Delete(podsGR, "m1", pod("ns", name, "1", "Running", nil)); err != nil {
			t.Fatal(err)
		}
	}
	p2 := page(ListOptions{Limit: 2, Continue: p1.Continue})
	if p2.Continue == "" || p2.Remaining < 1 || p2.Remaining > 2 {
		t.Errorf("after deletions before the cursor: continue %q remaining %d, want a next page and an estimate of 1 to 2", p2.Continue, p2.Remaining)
	}
	p3 := page(ListOptions{Limit: 2, Continue: p2.Continue})
	if got := names(p3.Items); !slices.Equal(got, []string{"m1/ns/e", "m1/ns/f"}) || p3.Continue != "" || p3.Remaining != 0 {
		t.Errorf("last page %v continue %q remaining %d", got, p3.Continue, p3.Remaining)
	}
}
