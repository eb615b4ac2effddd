package schedule

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
