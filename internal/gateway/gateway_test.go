package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/gateway"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	if os.Getenv(bareProxyEnv) != "" {
		fmt.Fprintln(os.Stderr, serveBareProxy())
		os.Exit(1)
	}
	os.Exit(testenv.Main(m, testenv.Options{Members: 2, APIServerOnly: true}, &env))
}

// startGateway runs a gateway in-process in front of the environment's
// host, with the identity config/rbac/gateway.yaml grants, and returns a
// client configuration for it without credentials (TLS trusts its
// self-signed certificate).
func startGateway(t *testing.T, change ...func(*gateway.Options)) *rest.Config {
	t.Helper()
	testenv.Need(t, env)
	return startGatewayFor(t, env, change...)
}

// startGatewayFor is startGateway in front of e's host, its options
// changed by change.
func startGatewayFor(t testing.TB, env *testenv.Environment, change ...func(*gateway.Options)) *rest.Config {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := gatewayIdentity(t, env, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := gateway.NewOptions()
	o.HostKubeconfig = kubeconfig
	o.Authentication.ClientCert.ClientCA = localenv.HostClientCAFile(env.StateDir)
	o.SecureServing.Listener, o.SecureServing.BindPort = ln, ln.Addr().(*net.TCPAddr).Port
	o.SecureServing.ServerCert.CertDirectory = dir
	for _, c := range change {
		c(o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	cfg := &rest.Config{Host: "https://" + ln.Addr().String(), TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "flotilla-gateway.crt")}}
	cs := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(cfg))
	testenv.Eventually(t, 30*time.Second, "the gateway is ready", func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
	return cfg
}

// gatewayIdentity applies config/rbac/gateway.yaml to env's host and
// writes a kubeconfig of the gateway's ServiceAccount into dir, returning
// its path.
func gatewayIdentity(t testing.TB, env *testenv.Environment, dir string) string {
	t.Helper()
	ctx := context.Background()
	if err := rbac.Apply(ctx, env.Host.Config, rbac.GatewayFile); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Host.Client.CoreV1().ServiceAccounts(rbac.Namespace).CreateToken(ctx, rbac.GatewayServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "gateway.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: env.Host.Config.Host, CertificateAuthorityData: env.Host.Config.CAData}
	kc.AuthInfos["gateway"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "gateway"}
	kc.CurrentContext = "host"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// as returns a client of the gateway that sends token.
func as(t *testing.T, gw *rest.Config, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(gw)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

// adminThrough returns a client of the gateway with the host admin's
// credentials.
func adminThrough(t *testing.T, gw *rest.Config) kubernetes.Interface {
	t.Helper()
	if env.Host.Config.BearerToken == "" {
		t.Fatal("the host admin kubeconfig has no token")
	}
	return as(t, gw, env.Host.Config.BearerToken)
}

// TestHostKindsPassThrough: discovery, create, get, list with a selector,
// server-side apply, watch and delete of host objects through the
// gateway, and the host's errors (404, 409, 422 with the field path)
// unchanged.
func TestHostKindsPassThrough(t *testing.T) {
	gw := startGateway(t)
	ctx := context.Background()
	admin := adminThrough(t, gw)
	ns := env.Namespace(t)

	if err := crd.Install(ctx, env.Host.Config); err != nil {
		t.Fatal(err)
	}
	groups, err := admin.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Groups {
		found = found || g.Name == "flotilla.io"
	}
	if !found {
		t.Errorf("discovery through the gateway lacks flotilla.io: %v", groups.Groups)
	}
	// OpenAPI (kubectl explain, client-side validation): /openapi/v3 is
	// the host's, not a redirect to /openapi/v3/. The host publishes a
	// new CRD's OpenAPI a moment after the CRD is established.
	testenv.Eventually(t, 30*time.Second, "OpenAPI v3 through the gateway has flotilla.io", func(context.Context) error {
		paths, err := admin.Discovery().OpenAPIV3().Paths()
		if err != nil {
			return err
		}
		if paths["apis/flotilla.io/v1alpha1"] == nil {
			return fmt.Errorf("%d paths, none apis/flotilla.io/v1alpha1", len(paths))
		}
		return nil
	})
	if _, err := admin.Discovery().OpenAPISchema(); err != nil {
		t.Errorf("OpenAPI v2 through the gateway: %v", err)
	}
	if v, err := admin.Discovery().ServerVersion(); err != nil || !strings.HasPrefix(v.GitVersion, "v1.36") {
		t.Errorf("version through the gateway: %v, %v; want the host's v1.36", v, err)
	}

	cms := admin.CoreV1().ConfigMaps(ns)
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}, Data: map[string]string{"a": "1"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "web" {
			t.Errorf("watch through the gateway: %s %v, want ADDED web", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("watch through the gateway: no event within 30s of the create")
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("web", ns).WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "gateway-test", Force: true}); err != nil {
		t.Errorf("server-side apply through the gateway: %v", err)
	}
	got, err := cms.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" || got.Data["b"] != "2" {
		t.Errorf("get after apply: %v, %v", got.Data, err)
	}
	if list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app=web"}); err != nil || len(list.Items) != 1 {
		t.Errorf("list with a selector: %v, %v", list, err)
	}
	if _, err := cms.Patch(ctx, "web", types.MergePatchType, []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("merge patch through the gateway: %v", err)
	}

	// The host's errors, unchanged.
	direct := env.Host.Client.CoreV1().ConfigMaps(ns)
	_, gwErr := cms.Get(ctx, "missing", metav1.GetOptions{})
	_, hostErr := direct.Get(ctx, "missing", metav1.GetOptions{})
	sameError(t, "get a missing object", gwErr, hostErr, apierrors.IsNotFound)
	_, gwErr = cms.Create(ctx, cm, metav1.CreateOptions{})
	_, hostErr = direct.Create(ctx, cm, metav1.CreateOptions{})
	sameError(t, "create an existing object", gwErr, hostErr, apierrors.IsAlreadyExists)
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}
	_, gwErr = cms.Create(ctx, bad, metav1.CreateOptions{})
	_, hostErr = direct.Create(ctx, bad, metav1.CreateOptions{})
	sameError(t, "create an invalid object", gwErr, hostErr, apierrors.IsInvalid)
	if !strings.Contains(fmt.Sprint(gwErr), "metadata.name") {
		t.Errorf("invalid object error %q lacks the field path", gwErr)
	}

	if err := cms.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete through the gateway: %v", err)
	}
	if _, err := direct.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after delete through the gateway the host still has it: %v", err)
	}
}

// sameError checks that the gateway answered with the host's error.
func sameError(t *testing.T, what string, gw, host error, is func(error) bool) {
	t.Helper()
	if !is(gw) || !is(host) {
		t.Errorf("%s: gateway %v, host %v", what, gw, host)
		return
	}
	if gw.Error() != host.Error() {
		t.Errorf("%s: gateway says %q, host says %q", what, gw, host)
	}
}

// TestHostRBACDecides: a ServiceAccount that may edit one namespace works
// there through the gateway and is refused elsewhere with the host's
// message; it may not impersonate; an unknown token is 401; the admin may
// act as the ServiceAccount (kubectl --as) and then has only its rights.
func TestHostRBACDecides(t *testing.T) {
	gw := startGateway(t)
	ctx := context.Background()
	own, other := env.Namespace(t), env.Namespace(t)
	token := serviceAccountWithRole(t, own, "dev", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
	dev := as(t, gw, token)
	user := "system:serviceaccount:" + own + ":dev"
	testenv.Eventually(t, 30*time.Second, "the ServiceAccount creates a ConfigMap in its namespace through the gateway", func(ctx context.Context) error {
		_, err := dev.CoreV1().ConfigMaps(own).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err // the RoleBinding may take a moment to be seen
	})
	_, err := dev.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{})
	want := fmt.Sprintf(`configmaps is forbidden: User %q cannot list resource "configmaps" in API group "" in the namespace %q`, user, other)
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("listing another namespace's ConfigMaps: %v, want 403 %q", err, want)
	}
	if _, err := dev.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets cluster-wide: %v, want 403", err)
	}

	// The host learns the ServiceAccount from its own token; an admin
	// acting as it (below) goes by impersonation.
	before := hostRequestCounts(t, gw)
	if _, err := dev.CoreV1().ConfigMaps(own).Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("the ServiceAccount reads its ConfigMap: %v", err)
	}
	if after := hostRequestCounts(t, gw); after["token"] != before["token"]+1 || after["impersonation"] != before["impersonation"] {
		t.Errorf("a get with a ServiceAccount token reached the host as %v -> %v, want one more by token", before, after)
	}

	// No impersonation without the right to it.
	cfg := rest.CopyConfig(gw)
	cfg.BearerToken = token
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount impersonating an admin: %v, want 403", err)
	}
	// An admin acting as the ServiceAccount has its rights only.
	cfg = rest.CopyConfig(gw)
	cfg.BearerToken = env.Host.Config.BearerToken
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + own, "system:authenticated"}}
	asDev := kubernetes.NewForConfigOrDie(cfg)
	before = hostRequestCounts(t, gw)
	if _, err := asDev.CoreV1().ConfigMaps(own).Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("admin --as the ServiceAccount, its own namespace: %v", err)
	}
	if after := hostRequestCounts(t, gw); after["impersonation"] != before["impersonation"]+1 || after["token"] != before["token"] {
		t.Errorf("a get --as the ServiceAccount reached the host as %v -> %v, want one more by impersonation", before, after)
	}
	if _, err := asDev.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("admin --as the ServiceAccount, another namespace: %v, want 403", err)
	}
	// A token the host does not know.
	if _, err := as(t, gw, "not-a-token").CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("an unknown token: %v, want 401", err)
	}
}

// hostRequestCounts reads flotilla_gateway_host_requests_total by label
// from the gateway's /metrics, as the admin.
func hostRequestCounts(t *testing.T, gw *rest.Config) map[string]int {
	t.Helper()
	body, err := adminThrough(t, gw).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("read the gateway's metrics: %v", err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `flotilla_gateway_host_requests_total{as="`)
		if !ok {
			continue
		}
		as, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		counts[as] = int(n)
	}
	return counts
}
