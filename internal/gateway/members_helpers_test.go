package gateway_test

// This file holds the helpers of the member kinds' tests: joined members,
// host and member clients, pods, warnings and service-account tokens.

import (
	"context"
	"sort"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// Member names of the joined test members.
var memberNames = []string{"alpha", "beta"}

var joinOnce struct {
	sync.Once
	err error
}

// joinMembers joins the environment's two members as alpha and beta
// (once per package) and marks them Ready, as the cluster controller
// would.
func joinMembers(t *testing.T) {
	t.Helper()
	testenv.Need(t, env)
	joinOnce.Do(func() {
		ctx := context.Background()
		if joinOnce.err = crd.Install(ctx, env.Host.Config); joinOnce.err != nil {
			return
		}
		for i, name := range memberNames {
			if joinOnce.err = join.Join(ctx, join.Options{Name: name, Host: env.Host.Config, Member: env.Members[i].Config}); joinOnce.err != nil {
				return
			}
			if joinOnce.err = setReady(ctx, name, true, "Probed", ""); joinOnce.err != nil {
				return
			}
		}
	})
	if joinOnce.err != nil {
		t.Fatal(joinOnce.err)
	}
}

func hostClient(t *testing.T) client.Client {
	t.Helper()
	c, err := newHostClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newHostClient() (client.Client, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	return client.New(env.Host.Config, client.Options{Scheme: s})
}

// setReady writes a MemberCluster's Ready condition.
func setReady(ctx context.Context, name string, ready bool, reason, msg string) error {
	c, err := newHostClient()
	if err != nil {
		return err
	}
	mc := &v1alpha1.MemberCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return err
	}
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg})
	return c.Status().Update(ctx, mc)
}

// memberNamespace creates ns in both members, with the default
// ServiceAccount pods need (the members run no controllers).
func memberNamespace(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, m := range env.Members {
		if _, err := m.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if _, err := m.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func makePod(t *testing.T, m kubernetes.Interface, ns, name string, labels map[string]string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "node-x", AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if _, err := m.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// warnings collects the Warning headers a client receives.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// adminWithWarnings is adminThrough that records warnings.
func adminWithWarnings(t *testing.T, gw *rest.Config) (kubernetes.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(gw)
	cfg.BearerToken = env.Host.Config.BearerToken
	cfg.WarningHandler = w
	return kubernetes.NewForConfigOrDie(cfg), w
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Labels[v1alpha1.LabelCluster]+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

// saToken returns a token of a host ServiceAccount.
func saToken(t *testing.T, ns, name string) string {
	t.Helper()
	tr, err := env.Host.Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// serviceAccountWithRole creates a host ServiceAccount in ns bound to a
// Role of rules there (the host runs no ClusterRole aggregation, so the
// built-in roles are empty) and returns a token of it.
func serviceAccountWithRole(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	if _, err := env.Host.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Host.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := env.Host.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return saToken(t, ns, name)
}
