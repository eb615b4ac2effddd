package membercache

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

var podsGR = corev1.Resource("pods")

func pod(ns, name, rv, phase string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: labels,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Annotations:   map[string]string{lastApplied: "{}", "keep": "me"}},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(phase)},
	}
}

func newPodCache(t *testing.T, history int) *Cache {
	t.Helper()
	ks, err := ParseKinds([]string{"pods"})
	if err != nil {
		t.Fatal(err)
	}
	return New(ks, Options{History: history, WatchBuffer: 100})
}

func names(es []*Entry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Cluster+"/"+e.Namespace+"/"+e.Name)
	}
	return out
}

func list(t *testing.T, c *Cache, o ListOptions) []string {
	t.Helper()
	res, err := c.List(podsGR, o)
	if err != nil {
		t.Fatal(err)
	}
	return names(res.Items)
}

func TestEncodePrunesAndLabels(t *testing.T) {
	c := newPodCache(t, 10)
	if err := c.Set(podsGR, "a", pod("ns", "p", "7", "Running", map[string]string{"app": "x"})); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Get(podsGR, "ns", "p")
	if len(got) != 1 {
		t.Fatalf("get: %v", names(got))
	}
	raw, err := got[0].JSON()
	if err != nil {
		t.Fatal(err)
	}
	js := string(raw)
	for _, want := range []string{`"flotilla.io/cluster":"a"`, `"app":"x"`, `"keep":"me"`, `"kind":"Pod"`, `"apiVersion":"v1"`, `"resourceVersion":"` + c.FormatRV(got[0].RV) + `"`} {
		if !strings.Contains(js, want) {
			t.Errorf("JSON lacks %s: %s", want, js)
		}
	}
	for _, gone := range []string{"managedFields", lastApplied} {
		if strings.Contains(js, gone) {
			t.Errorf("JSON keeps %s: %s", gone, js)
		}
	}
	if got[0].Labels().Get(v1alpha1.LabelCluster) != "a" || got[0].Fields().Get("status.phase") != "Running" || got[0].Fields().Get("metadata.namespace") != "ns" {
		t.Errorf("index: labels %v fields %v", got[0].labels, got[0].fields)
	}
}

// TestHostObjectsCannotPoseAsAMember: the host's own objects (cluster
// "") lose a flotilla.io/cluster label their author gave them, so that a
// reader's -l flotilla.io/cluster=NAME sees that member's objects only.
func TestHostObjectsCannotPoseAsAMember(t *testing.T) {
	c := newPodCache(t, 10)
	if err := c.Set(podsGR, "", pod("ns", "fake", "1", "Running", map[string]string{v1alpha1.LabelCluster: "a", "app": "x"})); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(podsGR, "a", pod("ns", "real", "1", "Running", nil)); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelCluster: "a"})
	if got := list(t, c, ListOptions{Filter: Filter{Label: sel}}); !slices.Equal(got, []string{"a/ns/real"}) {
		t.Errorf("-l %s: %v, want a's pod only", sel, got)
	}
	got, _ := c.Get(podsGR, "ns", "fake")
	if len(got) != 1 {
		t.Fatalf("get: %v", names(got))
	}
	if raw, _ := got[0].JSON(); strings.Contains(string(raw), v1alpha1.LabelCluster) || !strings.Contains(string(raw), `"app":"x"`) {
		t.Errorf("host object's JSON: %s", raw)
	}
}

// TestFilterByCluster: Cluster in a filter keeps one member's objects.
func TestFilterByCluster(t *testing.T) {
	c := newPodCache(t, 10)
	for _, cl := range []string{"a", "b"} {
		if err := c.Set(podsGR, cl, pod("ns", "twin", "1", "Running", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got := list(t, c, ListOptions{Filter: Filter{Cluster: "b"}}); !slices.Equal(got, []string{"b/ns/twin"}) {
		t.Errorf("cluster b: %v", got)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	c := newPodCache(t, 100)
	for _, p := range []struct{ cluster, ns, name, phase, app string }{
		{"b", "ns1", "x", "Running", "web"}, {"a", "ns1", "x", "Pending", "web"}, {"a", "ns2", "y", "Running", "db"}, {"b", "ns1", "z", "Running", "db"},
	} {
		if err := c.Set(podsGR, p.cluster, pod(p.ns, p.name, "1", p.phase, map[string]string{"app": p.app})); err != nil {
			t.Fatal(err)
		}
	}
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }
	fsel := func(s string) fields.Selector { f, _ := fields.ParseSelector(s); return f }
	for _, tc := range []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"all, in namespace-name-cluster order", ListOptions{}, []string{"a/ns1/x", "b/ns1/x", "b/ns1/z", "a/ns2/y"}},
		{"namespace", ListOptions{Filter: Filter{Namespace: "ns2"}}, []string{"a/ns2/y"}},
		{"label", ListOptions{Filter: Filter{Label: sel("app=db")}}, []string{"b/ns1/z", "a/ns2/y"}},
		{"member label", ListOptions{Filter: Filter{Label: sel(v1alpha1.LabelCluster + "=a")}}, []string{"a/ns1/x", "a/ns2/y"}},
		{"field", ListOptions{Filter: Filter{Field: fsel("status.phase=Running,metadata.namespace=ns1")}}, []string{"b/ns1/x", "b/ns1/z"}},
		{"no match", ListOptions{Filter: Filter{Field: fsel("metadata.name=none")}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, c, tc.o); !slices.Equal(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
	// Pages of 3: a page, then the rest; a change between pages does not
	// repeat or skip what exists in both.
	p1, err := c.List(podsGR, ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p1.Continue == "" || p1.Remaining != 1 || len(p1.Items) != 3 {
		t.Fatalf("first page: %v continue %q remaining %d", names(p1.Items), p1.Continue, p1.Remaining)
	}
	_ = c.Set(podsGR, "a", pod("ns1", "w", "1", "Running", nil)) // sorts before the cursor
	p2, err := c.List(podsGR, ListOptions{Limit: 3, Continue: p1.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p2.Items); !slices.Equal(got, []string{"a/ns2/y"}) || p2.Continue != "" || p2.RV != p1.RV {
		t.Errorf("second page %v continue %q rv %s (first %s)", got, p2.Continue, p2.RV, p1.RV)
	}
	for _, bad := range []string{"!!", "e30", "eyJydiI6MX0"} {
		if _, err := c.List(podsGR, ListOptions{Continue: bad}); !errors.Is(err, ErrBadContinue) {
			t.Errorf("continue %q: %v, want ErrBadContinue", bad, err)
		}
	}
}

func TestReplaceRecordsOnlyChanges(t *testing.T) {
	c := newPodCache(t, 100)
	_ = c.Replace(podsGR, "a", []runtime.Object{pod("ns", "keep", "1", "", nil), pod("ns", "change", "1", "", nil), pod("ns", "go", "1", "", nil)})
	_ = c.Set(podsGR, "b", pod("ns", "other", "1", "", nil))
	w, err := c.Watch(podsGR, WatchOptions{RV: mustRV(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_ = c.Replace(podsGR, "a", []runtime.Object{pod("ns", "keep", "1", "", nil), pod("ns", "change", "2", "", nil), pod("ns", "new", "1", "", nil)})
	got := drain(w, 3)
	want := []string{"MODIFIED a/ns/change", "ADDED a/ns/new", "DELETED a/ns/go"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	c.RemoveCluster("a")
	if got := list(t, c, ListOptions{}); !slices.Equal(got, []string{"b/ns/other"}) {
		t.Errorf("after the member left: %v", got)
	}
}

func mustRV(t *testing.T, c *Cache) string {
	t.Helper()
	rv, err := c.CurrentRV(podsGR)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func drain(w *Watcher, n int) []string {
	var out []string
	for _, ev := range w.Backlog {
		out = append(out, fmt.Sprintf("%s %s/%s/%s", ev.Type, ev.Entry.Cluster, ev.Entry.Namespace, ev.Entry.Name))
	}
	for len(out) < n {
		select {
		case ev := <-w.Events():
			out = append(out, fmt.Sprintf("%s %s/%s/%s", ev.Type, ev.Entry.Cluster, ev.Entry.Namespace, ev.Entry.Name))
		default:
			return out
		}
	}
	return out
}

func TestWatchFollowsTheFilter(t *testing.T) {
	c := newPodCache(t, 100)
	_ = c.Set(podsGR, "a", pod("ns", "p", "1", "Pending", nil))
	sel, _ := fields.ParseSelector("status.phase=Running")
	w, err := c.Watch(podsGR, WatchOptions{Filter: Filter{Field: sel}, RV: mustRV(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_ = c.Set(podsGR, "a", pod("ns", "p", "2", "Running", nil))   // starts matching
	_ = c.Set(podsGR, "a", pod("ns", "p", "3", "Running", nil))   // still matches
	_ = c.Set(podsGR, "a", pod("ns", "p", "4", "Succeeded", nil)) // stops matching
	_ = c.Set(podsGR, "a", pod("ns", "p", "4", "Succeeded", nil)) // unchanged: nothing
	_ = c.Delete(podsGR, "a", pod("ns", "p", "4", "", nil))       // not matching: nothing
	got := drain(w, 10)
	want := []string{"ADDED a/ns/p", "MODIFIED a/ns/p", "DELETED a/ns/p"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestWatchResumesOrExpires(t *testing.T) {
	c := newPodCache(t, 3)
	_ = c.Set(podsGR, "a", pod("ns", "p0", "1", "", nil))
	start := mustRV(t, c)
	for i := 1; i <= 2; i++ {
		_ = c.Set(podsGR, "a", pod("ns", fmt.Sprintf("p%d", i), "1", "", nil))
	}
	w, err := c.Watch(podsGR, WatchOptions{RV: start})
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(w, 2); !slices.Equal(got, []string{"ADDED a/ns/p1", "ADDED a/ns/p2"}) {
		t.Errorf("resumed: %v", got)
	}
	w.Stop()
	// Two more changes push the start out of a history of three.
	_ = c.Set(podsGR, "a", pod("ns", "p3", "1", "", nil))
	_ = c.Set(podsGR, "a", pod("ns", "p4", "1", "", nil))
	if _, err := c.Watch(podsGR, WatchOptions{RV: start}); !errors.Is(err, ErrExpired) {
		t.Errorf("watch from before the history: %v, want ErrExpired", err)
	}
	for _, rv := range []string{"12", "abc", "99999999999999999"} {
		if _, err := c.Watch(podsGR, WatchOptions{RV: rv}); !errors.Is(err, ErrExpired) {
			t.Errorf("watch from foreign resourceVersion %s: %v, want ErrExpired", rv, err)
		}
	}
	// Initial events: everything, then the end-of-initial-events bookmark.
	w, err = c.Watch(podsGR, WatchOptions{SendInitialEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if n := len(w.Backlog); n != 6 || w.Backlog[5].Type != watch.Bookmark || !w.Backlog[5].InitialEventsEnd {
		t.Errorf("initial events: %d, last %+v", n, w.Backlog[n-1])
	}
}

func TestSlowWatcherIsEnded(t *testing.T) {
	ks, _ := ParseKinds([]string{"pods"})
	c := New(ks, Options{WatchBuffer: 2})
	w, err := c.Watch(podsGR, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_ = c.Set(podsGR, "a", pod("ns", fmt.Sprintf("p%d", i), "1", "", nil))
	}
	n := 0
	for range w.Events() {
		n++
	}
	if n != 2 {
		t.Errorf("a watcher with room for 2 got %d events before it was ended", n)
	}
	w.Stop() // no panic on a watcher the cache ended
}

func TestParseKinds(t *testing.T) {
	ks, err := ParseKinds(DefaultKinds)
	if err != nil || len(ks) != len(DefaultKinds) {
		t.Fatalf("default kinds: %v, %v", ks, err)
	}
	if _, err := ParseKinds([]string{"deployments.apps"}); err == nil || !strings.Contains(err.Error(), "known: ") {
		t.Errorf("unknown kind: %v, want an error listing the known ones", err)
	}
	k := ks[0]
	if err := k.ValidateFieldSelector(fields.OneTermEqualSelector("spec.nodeName", "x")); err != nil {
		t.Error(err)
	}
	if err := k.ValidateFieldSelector(fields.OneTermEqualSelector("spec.bogus", "x")); err == nil || err.Error() != "field label not supported: spec.bogus" {
		t.Errorf("bogus field: %v", err)
	}
}

// TestResourceVersionsStayTheCaches: a resourceVersion parses back to its
// sequence however far the sequence has gone (one past 10^10 broke every
// resume when the epoch was taken by division), and one ahead of every
// change the cache has made, or of another epoch, is not the cache's.
func TestResourceVersionsStayTheCaches(t *testing.T) {
	c := newPodCache(t, 3)
	far := uint64(20_000_000_000)
	c.seq.Store(far)
	for _, tt := range []struct {
		rv   string
		want uint64
		ok   bool
	}{
		{c.FormatRV(far), far, true},
		{c.FormatRV(1), 1, true},
		{c.FormatRV(far + 1), 0, false},
		{strconv.FormatUint((c.epoch+1)*rvBase+1, 10), 0, false},
		{strconv.FormatUint((c.epoch-1)*rvBase+far, 10), 0, false},
	} {
		got, ok := c.ParseRV(tt.rv)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRV(%s) = %d, %v; want %d, %v", tt.rv, got, ok, tt.want, tt.ok)
		}
	}
	if max := uint64(maxEpoch)*rvBase + rvBase; max > math.MaxInt64 {
		t.Errorf("the largest resourceVersion %d does not fit an int64", max)
	}
}

// TestDeletionCarriesItsResourceVersion: a deletion's event, and one for
// an object that stops matching the watcher's filter, carry the last
// state at the event's resourceVersion (kube-apiserver's), while the
// store keeps the last state as it was until an event is written.
func TestDeletionCarriesItsResourceVersion(t *testing.T) {
	c := newPodCache(t, 100)
	_ = c.Set(podsGR, "a", pod("ns", "p", "1", "Running", nil))
	_ = c.Set(podsGR, "a", pod("ns", "q", "1", "Running", nil))
	sel, _ := fields.ParseSelector("status.phase=Running")
	w, err := c.Watch(podsGR, WatchOptions{Filter: Filter{Field: sel}, RV: mustRV(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_ = c.Delete(podsGR, "a", pod("ns", "p", "1", "", nil))
	_ = c.Set(podsGR, "a", pod("ns", "q", "2", "Failed", nil)) // stops matching
	for i := range 2 {
		var ev Event
		select {
		case ev = <-w.Events():
		default:
			t.Fatalf("event %d missing", i)
		}
		if ev.Type != watch.Deleted {
			t.Fatalf("event %d is %s, want DELETED", i, ev.Type)
		}
		e := c.EventEntry(ev)
		js, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := `"resourceVersion":"` + c.FormatRV(ev.RV) + `"`; e.RV != ev.RV || !strings.Contains(string(js), want) {
			t.Errorf("%s: entry at %d, JSON %s; want %s", e.Name, e.RV, js, want)
		}
		if e.Name == "q" && !strings.Contains(string(js), `"phase":"Running"`) {
			t.Errorf("q: %s, want its last matching state", js)
		}
	}
}

// An object of the same name with another UID (deleted and created again
// in the member while its feed did not watch, a StatefulSet's pod say) is
// the old one's deletion and its own addition, as kube-apiserver sends
// them, whether a relist or a watch event brings it; even at the same
// member resourceVersion, another UID is another object.
func TestRecreatedObjectIsDeletedAndAdded(t *testing.T) {
	withUID := func(rv, uid string) *corev1.Pod {
		p := pod("ns", "web-0", rv, "", nil)
		p.UID = types.UID(uid)
		return p
	}
	c := newPodCache(t, 100)
	_ = c.Replace(podsGR, "a", []runtime.Object{withUID("1", "u1")})
	w, err := c.Watch(podsGR, WatchOptions{RV: mustRV(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_ = c.Replace(podsGR, "a", []runtime.Object{withUID("7", "u2")})
	_ = c.Set(podsGR, "a", withUID("8", "u2"))
	_ = c.Set(podsGR, "a", withUID("8", "u3"))
	got := drain(w, 10)
	want := []string{"DELETED a/ns/web-0", "ADDED a/ns/web-0", "MODIFIED a/ns/web-0", "DELETED a/ns/web-0", "ADDED a/ns/web-0"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if got := list(t, c, ListOptions{}); !slices.Equal(got, []string{"a/ns/web-0"}) {
		t.Errorf("list %v, want the one pod", got)
	}
}
