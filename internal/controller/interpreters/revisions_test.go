package interpreters_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/interpreters"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// TestRestartKeepsTheGenerationInUse: the generation of an interpreter in
// use is recorded in a ControllerRevision owned by it; a controller-manager
// that starts while that generation no longer type-checks (its CRD lost a
// field it reads) uses the recorded one instead of propagating the kind
// uninterpreted. (The revision is owned by the interpreter: the host's
// garbage collector deletes it with the interpreter.)
func TestRestartKeepsTheGenerationInUse(t *testing.T) {
	c := startControlPlane(t)
	ctx := context.Background()
	wi := shippedCloneSet(t)
	if err := c.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), wi) })
	waitReady(t, wi.Name, metav1.ConditionTrue, "TypeChecked")
	if err := c.Get(ctx, client.ObjectKeyFromObject(wi), wi); err != nil {
		t.Fatal(err)
	}
	revisions := func(ctx context.Context) ([]appsv1.ControllerRevision, error) {
		list := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, list, client.InNamespace(v1alpha1.SystemNamespace)); err != nil {
			return nil, err
		}
		var mine []appsv1.ControllerRevision
		for _, rev := range list.Items {
			if rev.Annotations["flotilla.io/interpreter"] == wi.Name {
				mine = append(mine, rev)
			}
		}
		return mine, nil
	}
	testenv.Eventually(t, waitTimeout, "the generation in use recorded as a ControllerRevision", func(ctx context.Context) error {
		revs, err := revisions(ctx)
		if err != nil {
			return err
		}
		if len(revs) != 1 || revs[0].Revision != wi.Generation || !metav1.IsControlledBy(&revs[0], wi) {
			return fmt.Errorf("revisions %v, want one at generation %d controlled by the interpreter", revs, wi.Generation)
		}
		return nil
	})

	setStatusField(t, "updatedReadyReplicas", false)
	t.Cleanup(func() { setStatusField(t, "updatedReadyReplicas", true) })
	waitReady(t, wi.Name, metav1.ConditionFalse, "Invalid")

	// A controller-manager starting now: its own cache, a fresh registry.
	out, registry := startLoader(t, wi.Name)
	gk := schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}
	if out.InUse != wi.Generation || out.Err == nil || registry.Get(gk) == nil {
		t.Fatalf("a loader starting while generation %d does not check: in use %d, error %v, in the registry %v; want the recorded generation in use",
			wi.Generation, out.InUse, out.Err, registry.Get(gk) != nil)
	}
	if msg := interpreters.Condition(out, wi.Generation).Message; !strings.Contains(msg, "no longer checks") || !strings.Contains(msg, "stays in use") {
		t.Errorf("condition message %q", msg)
	}
}

// startLoader runs a loader of its own against the host, as a
// controller-manager that has just started does, and returns the named
// interpreter's outcome once every interpreter is loaded.
func startLoader(t *testing.T, name string) (interpreters.Outcome, *workload.Registry) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	// The controller-manager's own identity and permissions.
	cfg := env.ControllerConfig(t)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	registry := &workload.Registry{}
	l := interpreters.NewLoader(informers, reader, mapper, registry)
	go func() { _ = l.Start(ctx) }()
	select {
	case <-l.Synced():
	case <-time.After(waitTimeout):
		t.Fatal("the loader did not load the interpreters")
	}
	out, ok := l.Outcome(name)
	if !ok {
		t.Fatalf("no outcome for %s", name)
	}
	return out, registry
}
