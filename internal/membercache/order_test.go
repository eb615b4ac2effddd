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
