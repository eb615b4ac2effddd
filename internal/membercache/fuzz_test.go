package membercache

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzList: any continue token, label selector, field selector and
// resourceVersion a client sends gets a page or a clean error, never a
// panic; a page never repeats an item and a token the cache issued always
// works.
func FuzzList(f *testing.F) {
	f.Add("", "app=web", "status.phase=Running", "", int64(1))
	f.Add("eyJydiI6MSwic3RhcnQiOiJ4In0", "", "", "0", int64(0))
	f.Add("!!", "a in (b,c)", "metadata.name!=x", "99999999999999999999", int64(-1))
	c := newPodCacheF(f)
	for _, p := range []struct{ cluster, ns, name, app string }{{"a", "ns", "x", "web"}, {"b", "ns", "x", "db"}, {"a", "ns2", "y", "web"}} {
		if err := c.Set(podsGR, p.cluster, pod(p.ns, p.name, "1", "Running", map[string]string{"app": p.app})); err != nil {
			f.Fatal(err)
		}
	}
	k, _ := c.Kind(podsGR)
	f.Fuzz(func(t *testing.T, cont, label, field, rv string, limit int64) {
		o := ListOptions{Continue: cont, Limit: limit}
		if sel, err := labels.Parse(label); err == nil {
			o.Label = sel
		}
		if sel, err := fields.ParseSelector(field); err == nil && k.ValidateFieldSelector(sel) == nil {
			o.Field = sel
		}
		_, _ = c.ParseRV(rv)
		if w, err := c.Watch(podsGR, WatchOptions{Filter: o.Filter, RV: rv}); err == nil {
			w.Stop()
		} else if !errors.Is(err, ErrExpired) {
			t.Fatalf("watch from %q: %v", rv, err)
		}
		seen := map[string]bool{}
		for pages := 0; pages < 10; pages++ {
			res, err := c.List(podsGR, o)
			if err != nil {
				if !errors.Is(err, ErrBadContinue) && !errors.Is(err, ErrExpired) {
					t.Fatalf("list %v: %v", o, err)
				}
				if pages > 0 {
					t.Fatalf("a token the cache issued was refused: %v", err)
				}
				return
			}
			for _, e := range res.Items {
				if seen[e.key()] {
					t.Fatalf("%s listed twice", e.key())
				}
				seen[e.key()] = true
			}
			if res.Continue == "" {
				return
			}
			o.Continue = res.Continue
		}
	})
}

func newPodCacheF(f *testing.F) *Cache {
	ks, err := ParseKinds([]string{"pods"})
	if err != nil {
		f.Fatal(err)
	}
	return New(ks, Options{History: 100})
}
