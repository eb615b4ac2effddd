package federate_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/join"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/testenv/controlplane"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2, NodesPerMember: 1}, &env))
}

// memberName is the member every test uses; the second member is joined
// only by the tests that need two (secondMember).
const memberName = "member-1"

var (
	startOnce sync.Once
	started   bool
	admin     client.Client
	plane     *controlplane.Plane
)

// startControlPlane runs the controllers that take an object from the host
// to the members (cluster, federate, schedule, propagate) in-process, once
// per package, and joins the member. It returns a host client with the
// environment's admin identity.
func startControlPlane(t *testing.T) client.Client {
	t.Helper()
	testenv.Need(t, env)
	startOnce.Do(func() {
		ctx := context.Background()
		// The controllers run as the controller-manager's ServiceAccount
		// with the shipped role, as in `flotilla up`; their logs go to
		// stderr, which go test shows for failures.
		opts := controlplane.Options(cluster.Name, federate.Name, schedule.Name, propagate.Name)
		opts.Failover = testFailover
		// crd_test.go waits for kinds to come and go: discover often.
		opts.TemplateDiscoveryInterval = 2 * time.Second
		plane = controlplane.Start(t, env, opts)
		m := env.Cluster(memberName)
		if err := join.Join(ctx, join.Options{Name: memberName, Host: env.Host.Config, Member: m.Config, Labels: m.Labels}); err != nil {
			t.Fatalf("join %s: %v", memberName, err)
		}
		if err := join.WaitReady(ctx, env.Host.Config, memberName, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		admin = newClient(t, env.Host.Config)
		started = true
	})
	if !started {
		t.Fatal("control plane failed to start in an earlier test")
	}
	return admin
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// userRolesFile is the shipped example of the users' roles.
const userRolesFile = "../../../config/rbac/user-roles.yaml"

// userRoles reads the ClusterRoles of config/rbac/user-roles.yaml.
func userRoles(t *testing.T) map[string]*rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(userRolesFile)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), role); err != nil {
			t.Fatalf("%s: %v", userRolesFile, err)
		}
		if role.Name != "" {
			roles[role.Name] = role
		}
	}
	return roles
}

var rolesOnce sync.Once

// namespaceUser returns a client acting as a user who has, in ns only,
// the shipped flotilla-edit role and a Role to manage workloads: what a
// namespace editor has on a host whose kube-controller-manager aggregates
// flotilla-edit into edit (the test host runs no aggregation controller).
func namespaceUser(t *testing.T, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	rolesOnce.Do(func() {
		for _, r := range userRoles(t) {
			if err := admin.Create(ctx, r); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create ClusterRole %s: %v", r.Name, err)
			}
		}
	})
	user := "user-of-" + ns
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workloads"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}},
				{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}},
			},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workloads"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "workloads"},
			Subjects:   subjects,
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flotilla-edit"},
			Subjects:   subjects,
		},
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	cfg := rest.CopyConfig(env.Host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c := newClient(t, cfg)
	// RBAC caches settle within moments: wait until the user may work.
	testenv.Eventually(t, 30*time.Second, "namespace user may list PropagationPolicies", func(ctx context.Context) error {
		return c.List(ctx, &v1alpha1.PropagationPolicyList{}, client.InNamespace(ns))
	})
	return c
}

// createClusterPolicy creates a ClusterPropagationPolicy as the admin and
// deletes it when the test ends.
func createClusterPolicy(t *testing.T, name string, spec v1alpha1.PropagationSpec) {
	t.Helper()
	p := &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := admin.Create(context.Background(), p); err != nil {
		t.Fatalf("create ClusterPropagationPolicy %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin.Delete(context.Background(), p); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete ClusterPropagationPolicy %s: %v", name, err)
		}
	})
}

// errNotYet is a poll's "keep waiting".
var errNotYet = errors.New("not yet")
