package schedule

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/policy"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{HostOnly: true}, &env))
}

// A FederatedObject whose template kind the host does not serve (a CRD
// removed, or not discovered yet) is looked at again later rather than
// dropped as if its template did not exist.
func TestTemplateOfAnUnservedKindIsRetried(t *testing.T) {
	testenv.Need(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, tc := hostClients(ctx, t)

	ns := env.Namespace(t)
	cpp := &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "unserved-kind"}}
	if err := c.Create(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), cpp); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	fo := &v1alpha1.FederatedObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w.widget.example.invalid"},
		Spec: v1alpha1.FederatedObjectSpec{
			Template: v1alpha1.TemplateReference{APIVersion: "example.invalid/v1", Kind: "Widget", Namespace: ns, Name: "w", UID: "u"},
			Policy:   &v1alpha1.PolicyReference{Kind: policy.KindClusterPropagationPolicy, Name: cpp.Name},
		},
	}
	if err := c.Create(ctx, fo); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: c, Templates: tc}
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fo.Name}})
	if err == nil && res.RequeueAfter == 0 {
		t.Errorf("Reconcile() = %+v, nil: the object of an unserved kind is never looked at again", res)
	}
}

// hostClients returns a client of the test host and a started template
// cache.
func hostClients(ctx context.Context, t *testing.T) (client.Client, *templates.Cache) {
	t.Helper()
	cfg := env.Host.Config
	if err := crd.Install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := templates.New(cfg, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := tc.Start(ctx); err != nil {
			t.Errorf("template cache: %v", err)
		}
	}()
	if !tc.WaitForSync(ctx) {
		t.Fatal("template cache did not sync")
	}
	return c, tc
}

// A decision that moves replicas between the same clusters is told by a
// Scheduled event naming the placement before and after; the write
// decodes the answer into the object, which must not change what "before"
// was.
func TestRecordTellsAMove(t *testing.T) {
	testenv.Need(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _ := hostClients(ctx, t)
	ns := env.Namespace(t)
	fo := &v1alpha1.FederatedObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web.deployment.apps"},
		Spec: v1alpha1.FederatedObjectSpec{
			Template: v1alpha1.TemplateReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: "u"},
		},
	}
	if err := c.Create(ctx, fo); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: rec}
	scheduled := metav1.Condition{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", ObservedGeneration: fo.Generation}
	placed := func(a, b int32) []v1alpha1.ClusterPlacement {
		return []v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To(a)}, {Cluster: "b", Replicas: ptr.To(b)}}
	}
	if _, err := r.record(ctx, fo, placed(3, 3), scheduled, "first", ""); err != nil {
		t.Fatal(err)
	}
	stale := fo.DeepCopy()
	if _, err := r.record(ctx, fo, placed(4, 2), scheduled, "second", "capacity"); err != nil {
		t.Fatal(err)
	}
	// A decision from a copy that did not see the last write is refused.
	if written, err := r.record(ctx, stale, placed(5, 1), scheduled, "stale", ""); written || !apierrors.IsConflict(err) {
		t.Errorf("a decision from a stale copy: written %v, err %v; want a conflict and nothing written", written, err)
	}
	if got := summary(fo.Status.ScheduledClusters); got != "a=4,b=2" {
		t.Fatalf("status.scheduledClusters %s after the second decision, want a=4,b=2", got)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	want := []string{"Normal Scheduled a=4, b=2 (was a=3, b=3): capacity"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events %q, want %q (the first decision records none)", got, want)
	}
}
