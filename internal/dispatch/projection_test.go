package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// requestLog records every request a client sends, reads included.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
	rt   http.RoundTripper
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req.Method)
	l.mu.Unlock()
	return l.rt.RoundTrip(req)
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reqs
	l.reqs = nil
	return r
}

// loggedApplier returns an Applier for member-1 whose every request
// (reads too) is logged.
func loggedApplier(t *testing.T) (*dispatch.Applier, *requestLog) {
	t.Helper()
	testenv.Need(t, env)
	m := env.Members[0]
	log := &requestLog{}
	cfg := rest.CopyConfig(m.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.rt = rt; return log })
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	// Warm the mapper so that its discovery reads are not logged later.
	if _, _, err := dispatch.Resource(mapper, deployment("x", "x", "x").GroupVersionKind()); err != nil {
		t.Fatal(err)
	}
	return &dispatch.Applier{Client: dyn, Mapper: mapper}, log
}

// projection reads the member's copy and returns its projection, as the
// member cache keeps it.
func projection(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	live, err := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := dispatch.Project(live)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*unstructured.Unstructured)
}

// applyWith applies desired with a projection as the live object and
// returns the outcome and the requests it sent.
func applyWith(t *testing.T, a *dispatch.Applier, log *requestLog, desired *unstructured.Unstructured, opts dispatch.Options) (dispatch.Outcome, []string) {
	t.Helper()
	log.take()
	got, err := a.Apply(context.Background(), desired, opts)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return got, log.take()
}

func TestProjectionDecidesWithoutReadingTheCopy(t *testing.T) {
	a, log := loggedApplier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	verified := dispatch.NewVerified()
	opts := func() dispatch.Options {
		return dispatch.Options{Live: projection(t, ns, "web"), Verified: verified}
	}

	// cpu "0.5" is stored as "500m" and defaults are added: the projection
	// still matches, and nothing is read or written.
	mustApply(t, a, deployment(ns, "web", "nginx:1.27"), dispatch.Options{}, dispatch.Created)
	p := projection(t, ns, "web")
	if _, found, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "template"); found {
		t.Errorf("projection keeps spec.template: %v", p.Object)
	}
	if !dispatch.Written(p) || p.GetLabels()[dispatch.LabelTemplateHash] == "" {
		t.Errorf("projection lost what the controllers read: %v", p.Object)
	}
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.27"), opts()); got != dispatch.Unchanged || len(reqs) != 0 {
		t.Fatalf("unchanged copy: outcome %s, requests %v; want Unchanged and none", got, reqs)
	}

	// A sidecar and a label added in the member are not Flotilla's fields.
	live, _ := res.Get(ctx, "web", metav1.GetOptions{})
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers = append(containers, map[string]any{"name": "proxy", "image": "envoy:1"})
	_ = unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers")
	live.SetLabels(map[string]string{"team": "member-side", "flotilla.io/managed": "true", dispatch.LabelTemplateHash: live.GetLabels()[dispatch.LabelTemplateHash]})
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "injector"}); err != nil {
		t.Fatal(err)
	}
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.27"), opts()); got != dispatch.Unchanged || len(reqs) != 0 {
		t.Fatalf("member-side additions: outcome %s, requests %v; want Unchanged and none", got, reqs)
	}

	// Drift in a field Flotilla set: one read, one write.
	live, _ = res.Get(ctx, "web", metav1.GetOptions{})
	containers, _, _ = unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "nginx:hacked"
	_ = unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers")
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "member-operator"}); err != nil {
		t.Fatal(err)
	}
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.27"), opts()); got != dispatch.Updated || len(reqs) != 2 || reqs[0] != http.MethodGet {
		t.Fatalf("drift: outcome %s, requests %v; want Updated after one read", got, reqs)
	}
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.27"), opts()); got != dispatch.Unchanged || len(reqs) != 0 {
		t.Fatalf("after correcting drift: outcome %s, requests %v; want Unchanged and none", got, reqs)
	}

	// A template change is written without reading the copy.
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.28"), opts()); got != dispatch.Updated || len(reqs) != 1 || reqs[0] != http.MethodPatch {
		t.Fatalf("template change: outcome %s, requests %v; want Updated with one apply", got, reqs)
	}

	// An HPA's replicas are kept: no write, no read.
	live, _ = res.Get(ctx, "web", metav1.GetOptions{})
	_ = unstructured.SetNestedField(live.Object, int64(7), "spec", "replicas")
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "hpa"}); err != nil {
		t.Fatal(err)
	}
	keep := opts()
	keep.KeepLive = [][]string{{"spec", "replicas"}}
	if got, reqs := applyWith(t, a, log, deployment(ns, "web", "nginx:1.28"), keep); got != dispatch.Unchanged || len(reqs) != 0 {
		t.Fatalf("replicas kept from the member: outcome %s, requests %v; want Unchanged and none", got, reqs)
	}
	// Without KeepLive the federation's replicas are written back.
	if got, _ := applyWith(t, a, log, deployment(ns, "web", "nginx:1.28"), opts()); got != dispatch.Updated {
		t.Fatalf("replicas changed in the member: outcome %s; want Updated", got)
	}
}

func TestVerifiedRemembersAFullComparison(t *testing.T) {
	a, log := loggedApplier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	verified := dispatch.NewVerified()

	two := func() *unstructured.Unstructured {
		d := deployment(ns, "pair", "nginx:1.27")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		containers = append(containers, map[string]any{"name": "log", "image": "fluent:1"})
		_ = unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers")
		return d
	}
	mustApply(t, a, two(), dispatch.Options{}, dispatch.Created)

	// A member-side actor reorders the containers: every field holds
	// Flotilla's value, but the projection's hash (in the member's order)
	// differs from the intent's. One read settles it, and is remembered.
	live, _ := res.Get(ctx, "pair", metav1.GetOptions{})
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers[0], containers[1] = containers[1], containers[0]
	_ = unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers")
	if _, err := res.Update(ctx, live, metav1.UpdateOptions{FieldManager: "reorderer"}); err != nil {
		t.Fatal(err)
	}
	opts := dispatch.Options{Live: projection(t, ns, "pair"), Verified: verified}
	if got, reqs := applyWith(t, a, log, two(), opts); got != dispatch.Unchanged || len(reqs) != 1 || reqs[0] != http.MethodGet {
		t.Fatalf("reordered containers: outcome %s, requests %v; want Unchanged after one read", got, reqs)
	}
	if verified.Len() != 1 {
		t.Fatalf("Verified holds %d copies, want 1", verified.Len())
	}
	for range 3 {
		if got, reqs := applyWith(t, a, log, two(), opts); got != dispatch.Unchanged || len(reqs) != 0 {
			t.Fatalf("remembered comparison: outcome %s, requests %v; want Unchanged and none", got, reqs)
		}
	}
	// Without the memory, the copy is read again.
	opts.Verified = nil
	if got, reqs := applyWith(t, a, log, two(), opts); got != dispatch.Unchanged || len(reqs) != 1 {
		t.Fatalf("without Verified: outcome %s, requests %v; want Unchanged after one read", got, reqs)
	}
}

// TestCopyLabelledManagedButNeverAppliedConflicts: a copy that carries
// Flotilla's labels but was never applied by it is not Flotilla's: a
// Conflict (decided from the member cache's projection), never written,
// until adopted.
func TestCopyLabelledManagedButNeverAppliedConflicts(t *testing.T) {
	a, log := loggedApplier(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	verified := dispatch.NewVerified()

	// A manifest copied from another member: Flotilla's labels, but created
	// by someone else, so Flotilla's field manager owns nothing of it.
	in, err := dispatch.Prepare(deployment(ns, "copied", "nginx:1.27"))
	if err != nil {
		t.Fatal(err)
	}
	created, err := res.Create(ctx, in.Object, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	p := projection(t, ns, "copied")
	if dispatch.Written(p) {
		t.Fatalf("projection of a copy Flotilla never applied says Written: %v", p.Object)
	}
	log.take()
	got, err := a.Apply(ctx, deployment(ns, "copied", "nginx:1.28"), dispatch.Options{Live: p, Verified: verified})
	if reqs := log.take(); got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) || len(reqs) != 0 {
		t.Fatalf("outcome %s, %v, requests %v; want Conflict decided from the projection, without a request", got, err, reqs)
	}
	if live, err := res.Get(ctx, "copied", metav1.GetOptions{}); err != nil || live.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("the copy was written: %v", err)
	}
	if got, _ := applyWith(t, a, log, deployment(ns, "copied", "nginx:1.28"), dispatch.Options{Live: p, Verified: verified, Adopt: true}); got != dispatch.Adopted {
		t.Fatalf("with adoption: %s, want Adopted", got)
	}
}
