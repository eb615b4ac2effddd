package join_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2}, &env))
}

// hosts prepares two control planes: the environment's host, and member-2
// acting as a second, independent host (it gets the CRDs too).
func hosts(t *testing.T) (host, other *testenv.Cluster) {
	t.Helper()
	testenv.Need(t, env)
	for _, c := range []*testenv.Cluster{env.Host, env.Members[1]} {
		if err := crd.Install(context.Background(), c.Config); err != nil {
			t.Fatalf("install CRDs into %s: %v", c.Name, err)
		}
	}
	return env.Host, env.Members[1]
}

func TestJoinUnjoinJoin(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	m := env.Members[0]
	opts := join.Options{Name: "alpha", Host: host.Config, Member: m.Config, Labels: map[string]string{"topology.kubernetes.io/region": "us-east"}}
	for round := 1; round <= 2; round++ {
		if err := join.Join(ctx, opts); err != nil {
			t.Fatalf("round %d: join: %v", round, err)
		}
		// The member records the owner; the host holds a working token.
		ns, err := m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		id, _ := join.ControlPlaneID(ctx, host.Client)
		if ns.Annotations[v1alpha1.AnnotationControlPlaneID] != id || ns.Annotations[v1alpha1.AnnotationClusterName] != "alpha" {
			t.Errorf("round %d: member namespace annotations %v, want control plane %s and name alpha", round, ns.Annotations, id)
		}
		secret, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, "alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("round %d: credentials Secret: %v", round, err)
		}
		if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].Kind != "MemberCluster" {
			t.Errorf("round %d: Secret owners %v, want the MemberCluster", round, secret.OwnerReferences)
		}
		// The ServiceAccount token works against the member and may list nodes.
		cfg := rest.AnonymousClientConfig(m.Config)
		cfg.BearerToken = string(secret.Data["token"])
		if err := canListNodes(ctx, cfg); err != nil {
			t.Errorf("round %d: joined credentials: %v", round, err)
		}
		// Joining again with the same name only refreshes.
		if err := join.Join(ctx, opts); err != nil {
			t.Errorf("round %d: second join with the same name: %v", round, err)
		}
		if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "alpha", Host: host.Config}); err != nil {
			t.Fatalf("round %d: unjoin: %v", round, err)
		}
		if _, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, "alpha", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("round %d: credentials Secret still there after unjoin (err %v)", round, err)
		}
		testenv.Eventually(t, 60*time.Second, "member namespace gone", func(ctx context.Context) error {
			_, err := m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("namespace %s still there (err %v)", v1alpha1.SystemNamespace, err)
			}
			return nil
		})
		testenv.Eventually(t, 60*time.Second, "member RBAC gone", func(ctx context.Context) error {
			_, err := m.Client.RbacV1().ClusterRoleBindings().Get(ctx, join.ClusterRoleName, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("ClusterRoleBinding still there (err %v)", err)
			}
			return nil
		})
	}
}

// canListNodes proves a client configuration works against the member and
// is authorised to read nodes.
func canListNodes(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("listed no nodes")
	}
	return nil
}

func TestJoinRefusesMemberOwnedByAnotherControlPlane(t *testing.T) {
	host, other := hosts(t)
	ctx := context.Background()
	m := env.Members[0]
	if err := join.Join(ctx, join.Options{Name: "beta", Host: host.Config, Member: m.Config}); err != nil {
		t.Fatalf("join to the first control plane: %v", err)
	}
	t.Cleanup(func() { _ = join.Unjoin(ctx, join.UnjoinOptions{Name: "beta", Host: host.Config, Force: true}) })

	err := join.Join(ctx, join.Options{Name: "beta", Host: other.Config, Member: m.Config})
	if !errors.Is(err, join.ErrOwnedElsewhere) || !strings.Contains(err.Error(), "another Flotilla control plane") {
		t.Fatalf("join to a second control plane: err = %v, want ErrOwnedElsewhere naming the other control plane", err)
	}
	if _, err := other.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, "beta", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused join left a Secret in the second control plane (err %v)", err)
	}
	// Nor may the same control plane take it twice under another name.
	err = join.Join(ctx, join.Options{Name: "gamma", Host: host.Config, Member: m.Config})
	if !errors.Is(err, join.ErrOwnedElsewhere) || !strings.Contains(err.Error(), `as "beta"`) {
		t.Fatalf("join under a second name: err = %v, want ErrOwnedElsewhere naming beta", err)
	}
}

func TestJoinWithoutCRDsExplainsWhatToDo(t *testing.T) {
	testenv.Need(t, env)
	// member-1 has no flotilla CRDs; use it as a would-be host.
	err := join.Join(context.Background(), join.Options{Name: "delta", Host: env.Members[0].Config, Member: env.Members[0].Config})
	if err == nil || !strings.Contains(err.Error(), "controller-manager") {
		t.Fatalf("err = %v, want advice to start the controller-manager or apply the CRDs", err)
	}
}
