package autoscale_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/autoscale"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/controller/status"
	"github.com/flotilla-io/flotilla/internal/join"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/testenv/controlplane"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2, NodesPerMember: 1}, &env))
}

const waitTimeout = 3 * time.Minute

var (
	startOnce sync.Once
	started   bool
	admin     client.Client
)

// startControlPlane runs the controllers a federated HPA needs in-process,
// once per package, and joins both members.
func startControlPlane(t *testing.T) {
	t.Helper()
	testenv.Need(t, env)
	startOnce.Do(func() {
		ctx := context.Background()
		opts := controlplane.Options(cluster.Name, federate.Name, schedule.Name, propagate.Name, status.Name, autoscale.Name)
		controlplane.Start(t, env, opts)
		for _, m := range env.Members {
			if err := join.Join(ctx, join.Options{Name: m.Name, Host: env.Host.Config, Member: m.Config, Labels: m.Labels}); err != nil {
				t.Fatalf("join %s: %v", m.Name, err)
			}
		}
		for _, m := range env.Members {
			if err := join.WaitReady(ctx, env.Host.Config, m.Name, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		scheme, err := hostscheme.New()
		if err != nil {
			t.Fatal(err)
		}
		if admin, err = client.New(env.Host.Config, client.Options{Scheme: scheme}); err != nil {
			t.Fatal(err)
		}
		started = true
	})
	if !started {
		t.Fatal("control plane failed to start in an earlier test")
	}
}

// dividePolicy divides the namespace's Deployments equally over both
// members.
func dividePolicy(t *testing.T, ns string) {
	t.Helper()
	p := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "divide"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}},
			Placement: v1alpha1.Placement{
				ClusterNames:      []string{"member-1", "member-2"},
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide},
			},
		},
	}
	if err := admin.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}
