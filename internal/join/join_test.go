package join_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
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
		if secret.Labels[v1alpha1.LabelMemberCluster] != "alpha" {
			t.Errorf("round %d: Secret labels %v, want it bound to alpha by %s", round, secret.Labels, v1alpha1.LabelMemberCluster)
		}
		if ns.Annotations[v1alpha1.AnnotationCreated] != "true" {
			t.Errorf("round %d: member namespace annotations %v, want it marked as created by join", round, ns.Annotations)
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

// waitNamespaceGone waits until the member has no flotilla-system namespace
// (an earlier test's unjoin may still be deleting it).
func waitNamespaceGone(t *testing.T, m *testenv.Cluster) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, "no namespace "+v1alpha1.SystemNamespace+" in "+m.Name, func(ctx context.Context) error {
		_, err := m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace still there (err %v)", err)
	})
}

func TestUnjoinKeepsANamespaceThatExistedBeforeJoin(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	m := env.Members[0]
	waitNamespaceGone(t, m)
	// The member's operators already use flotilla-system.
	if _, err := m.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace, Labels: map[string]string{"team": "platform"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.Client.CoreV1().Namespaces().Delete(ctx, v1alpha1.SystemNamespace, metav1.DeleteOptions{})
	})
	keep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: v1alpha1.SystemNamespace}, Data: map[string]string{"k": "v"}}
	if _, err := m.Client.CoreV1().ConfigMaps(v1alpha1.SystemNamespace).Create(ctx, keep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := join.Join(ctx, join.Options{Name: "preexisting", Host: host.Config, Member: m.Config}); err != nil {
		t.Fatalf("join: %v", err)
	}
	ns, err := m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ns.Annotations[v1alpha1.AnnotationCreated]; ok || ns.Annotations[v1alpha1.AnnotationClusterName] != "preexisting" {
		t.Fatalf("member namespace annotations %v, want the claim and no %s", ns.Annotations, v1alpha1.AnnotationCreated)
	}
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "preexisting", Host: host.Config}); err != nil {
		t.Fatalf("unjoin: %v", err)
	}

	// What join added goes; the namespace, its labels and the pre-existing
	// object stay.
	testenv.Eventually(t, 60*time.Second, "ServiceAccount, token and RBAC gone", func(ctx context.Context) error {
		var left []string
		if _, err := m.Client.CoreV1().ServiceAccounts(v1alpha1.SystemNamespace).Get(ctx, join.ServiceAccountName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("ServiceAccount (err %v)", err))
		}
		if _, err := m.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, join.TokenSecretName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("token Secret (err %v)", err))
		}
		if _, err := m.Client.RbacV1().ClusterRoles().Get(ctx, join.ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("ClusterRole (err %v)", err))
		}
		if _, err := m.Client.RbacV1().ClusterRoleBindings().Get(ctx, join.ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("ClusterRoleBinding (err %v)", err))
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
	ns, err = m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace that existed before join: %v", err)
	}
	if ns.DeletionTimestamp != nil {
		t.Fatalf("namespace that existed before join is being deleted")
	}
	for _, k := range []string{v1alpha1.AnnotationControlPlaneID, v1alpha1.AnnotationClusterName} {
		if _, ok := ns.Annotations[k]; ok {
			t.Errorf("claim annotation %s left on the namespace: %v", k, ns.Annotations)
		}
	}
	if ns.Labels["team"] != "platform" || ns.Labels[v1alpha1.LabelManaged] != "" {
		t.Errorf("namespace labels %v, want the operators' label and not %s", ns.Labels, v1alpha1.LabelManaged)
	}
	if _, err := m.Client.CoreV1().ConfigMaps(v1alpha1.SystemNamespace).Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("pre-existing ConfigMap: %v", err)
	}
	// The member is free again: it can be joined under another name.
	if err := join.Join(ctx, join.Options{Name: "preexisting-again", Host: host.Config, Member: m.Config}); err != nil {
		t.Fatalf("join after unjoin: %v", err)
	}
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "preexisting-again", Host: host.Config}); err != nil {
		t.Fatalf("second unjoin: %v", err)
	}
}

func TestUnjoinKeepsACredentialsSecretMadeByHand(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	m := env.Members[1]
	// Registered by hand, with a Secret bound by its label as the docs say.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "byhand", Namespace: v1alpha1.SystemNamespace, Labels: map[string]string{v1alpha1.LabelMemberCluster: "byhand"}},
		Data:       map[string][]byte{member.KeyToken: []byte(m.Config.BearerToken), member.KeyCACert: m.Config.CAData},
	}
	if _, err := host.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Delete(ctx, "byhand", metav1.DeleteOptions{})
	})
	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "byhand"},
		Spec: v1alpha1.MemberClusterSpec{APIEndpoint: m.Config.Host, SecretRef: &v1alpha1.SecretReference{Name: "byhand"}}}
	c := hostClient(t, host)
	if err := c.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, mc) })

	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "byhand", Host: host.Config}); err != nil {
		t.Fatalf("unjoin: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mc), &v1alpha1.MemberCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("MemberCluster still there after unjoin (err %v)", err)
	}
	if _, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, "byhand", metav1.GetOptions{}); err != nil {
		t.Errorf("the Secret made by hand was deleted by unjoin (err %v)", err)
	}
}

func TestUnjoinDoesNotSendStoredCredentialsElsewhere(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	c := hostClient(t, host)
	// MemberCluster "rogue" names another member's Secret: unjoin must not
	// use it.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "rogue-target", Namespace: v1alpha1.SystemNamespace, Labels: map[string]string{v1alpha1.LabelMemberCluster: "someone-else"}},
		Data:       map[string][]byte{member.KeyToken: []byte("secret-token")},
	}
	if _, err := host.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Delete(ctx, secret.Name, metav1.DeleteOptions{})
	})
	for _, tc := range []struct {
		name, endpoint, secret, want string
	}{
		{"rogue", "https://127.0.0.1:1", "rogue-target", "bound to MemberCluster someone-else"},
		{"rogue-http", "http://127.0.0.1:1", "rogue-target", "insecure connection"},
	} {
		mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
			Spec: v1alpha1.MemberClusterSpec{APIEndpoint: tc.endpoint, SecretRef: &v1alpha1.SecretReference{Name: tc.secret}}}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(ctx, mc) })
		err := join.Unjoin(ctx, join.UnjoinOptions{Name: tc.name, Host: host.Config})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("unjoin %s: err = %v, want a refusal containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := host.Client.CoreV1().Secrets(v1alpha1.SystemNamespace).Get(ctx, secret.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the other member's Secret: %v", err)
	}
}

// hostClient returns a controller-runtime client for a host of the
// environment.
func hostClient(t *testing.T, host *testenv.Cluster) client.Client {
	t.Helper()
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(host.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUnjoinStoppedAfterTheClaimIsResumed: an unjoin killed after it took
// the claim off a namespace that existed before join (and before it
// deleted the ClusterRole) is finished by running unjoin again, instead of
// refusing a member "owned by another control plane".
func TestUnjoinStoppedAfterTheClaimIsResumed(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	m := env.Members[0]
	waitNamespaceGone(t, m)
	if _, err := m.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.Client.CoreV1().Namespaces().Delete(ctx, v1alpha1.SystemNamespace, metav1.DeleteOptions{})
	})
	if err := join.Join(ctx, join.Options{Name: "interrupted", Host: host.Config, Member: m.Config}); err != nil {
		t.Fatalf("join: %v", err)
	}
	// What the stopped unjoin did: the claim is gone, the ClusterRole not.
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.AnnotationControlPlaneID + `":null,"` + v1alpha1.AnnotationClusterName + `":null},"labels":{"` + v1alpha1.LabelManaged + `":null}}}`)
	if _, err := m.Client.CoreV1().Namespaces().Patch(ctx, v1alpha1.SystemNamespace, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "interrupted", Host: host.Config}); err != nil {
		t.Fatalf("unjoin run again: %v", err)
	}
	testenv.Eventually(t, 60*time.Second, "the ClusterRole and its binding gone", func(ctx context.Context) error {
		if _, err := m.Client.RbacV1().ClusterRoles().Get(ctx, join.ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRole: %v", err)
		}
		if _, err := m.Client.RbacV1().ClusterRoleBindings().Get(ctx, join.ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRoleBinding: %v", err)
		}
		return nil
	})
	if err := hostClient(t, host).Get(ctx, client.ObjectKey{Name: "interrupted"}, &v1alpha1.MemberCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("MemberCluster after unjoin: %v, want it gone", err)
	}
}

// TestJoinPullRefusesANamespaceMadeByOthers: a hub namespace made before
// the join by someone else (who may hold rights there, such as minting the
// agent's tokens) stops `flotilla join --mode pull` before anything is
// registered; joining again the same MemberCluster keeps working.
func TestJoinPullRefusesANamespaceMadeByOthers(t *testing.T) {
	host, _ := hosts(t)
	ctx := context.Background()
	const name = "squatted"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterNamespace(name)}}
	if _, err := host.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	_, err := join.JoinPull(ctx, join.PullOptions{Name: name, Host: host.Config})
	if err == nil || !strings.Contains(err.Error(), "is not owned by MemberCluster "+name) || !strings.Contains(err.Error(), ns.Name) {
		t.Fatalf("join with a namespace made by others: %v, want a refusal naming it", err)
	}
	hc := hostClient(t, host)
	if err := hc.Get(ctx, k8stypes.NamespacedName{Name: name}, &v1alpha1.MemberCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("MemberCluster %s after the refused join: %v, want none", name, err)
	}

	// A namespace of its own: joined, and joined again.
	const own = "own-namespace"
	for round := 1; round <= 2; round++ {
		if _, err := join.JoinPull(ctx, join.PullOptions{Name: own, Host: host.Config}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	t.Cleanup(func() {
		_ = hc.Delete(context.Background(), &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: own}})
	})
}
