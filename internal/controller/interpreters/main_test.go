package interpreters_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/controller/interpreters"
	"github.com/flotilla-io/flotilla/internal/controller/propagate"
	"github.com/flotilla-io/flotilla/internal/controller/rollout"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/controller/status"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/manager"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/internal/testenv/controlplane"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2, APIServerOnly: true}, &env))
}

// waitTimeout bounds each wait of the tests.
const waitTimeout = 2 * time.Minute

var (
	startOnce sync.Once
	started   bool
	admin     client.Client
)

// cloneSets is the resource of the CloneSet stand-in.
var cloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}

// startControlPlane installs the CloneSet CRD in the host and both
// members, lets the controller-manager's identity read CloneSets and
// write their status (as docs/custom-workloads.md tells an admin to),
// runs the controllers in-process once per package and joins both
// members.
func startControlPlane(t *testing.T) client.Client {
	t.Helper()
	testenv.Need(t, env)
	startOnce.Do(func() {
		ctx := context.Background()
		crd, err := crds.CloneSet()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append([]*testenv.Cluster{env.Host}, env.Members...) {
			installCRD(t, c, crd)
		}
		admin = newClient(t)
		grantCloneSets(t)
		opts := controlplane.Options(cluster.Name, federate.Name, schedule.Name, propagate.Name, status.Name, interpreters.Name, rollout.Name)
		opts.TemplateDiscoveryInterval = 2 * time.Second
		webhookOptions(t, &opts)
		controlplane.Start(t, env, opts)
		for _, m := range env.Members {
			if err := join.Join(ctx, join.Options{Name: m.Name, Host: env.Host.Config, Member: m.Config, Labels: m.Labels}); err != nil {
				t.Fatalf("join %s: %v", m.Name, err)
			}
			if err := join.WaitReady(ctx, env.Host.Config, m.Name, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		started = true
	})
	if !started {
		t.Fatal("control plane failed to start in an earlier test")
	}
	return admin
}

// installCRD creates a CRD in a cluster and waits until it is served.
func installCRD(t *testing.T, c *testenv.Cluster, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	cl := newClientFor(t, c)
	if err := cl.Create(context.Background(), crd.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s in %s: %v", crd.Name, c.Name, err)
	}
	testenv.Eventually(t, waitTimeout, "CRD "+crd.Name+" established in "+c.Name, func(ctx context.Context) error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := cl.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		return crds.Established(got)
	})
}

// grantCloneSets gives the controller-manager's ServiceAccount what a
// custom kind with an interpreter needs on the host.
func grantCloneSets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-clonesets"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"clonesets"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"clonesets/status"}, Verbs: []string{"patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-clonesets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: v1alpha1.SystemNamespace, Name: "flotilla-controller-manager"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	return newClientFor(t, env.Host)
}

func newClientFor(t *testing.T, c *testenv.Cluster) client.Client {
	t.Helper()
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// webhookOptions serves the WorkloadInterpreter webhook on a free
// loopback port with a self-signed certificate, as `flotilla up` does
// with its CA's.
func webhookOptions(t *testing.T, opts *manager.Options) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// In the environment's state directory: removed with the
	// environment, and there for as long as the controller-manager runs.
	dir := filepath.Join(env.StateDir, "webhook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts.WebhookPort, opts.WebhookHost, opts.WebhookCertDir = port, "127.0.0.1", dir
	opts.WebhookURL, opts.WebhookCAFile = fmt.Sprintf("https://127.0.0.1:%d", port), filepath.Join(dir, "ca.crt")
}
