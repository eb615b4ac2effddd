package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/cluster"
	"github.com/flotilla-io/flotilla/internal/manager"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Members: 2, NodesPerMember: 2, NodeCPU: "4"}, &env))
}

// Fast probing so that the tests see transitions in seconds; production
// defaults are in member.DefaultOptions.
var testSession = member.Options{
	ProbeInterval:     500 * time.Millisecond,
	ProbeTimeout:      time.Second,
	DiscoveryInterval: 2 * time.Second,
	FailureThreshold:  2 * time.Second,
	SuccessThreshold:  time.Second,
	NotifyInterval:    200 * time.Millisecond,
}

var (
	startOnce  sync.Once
	reconciler *cluster.Reconciler
	hostClient client.Client // the admin's
)

// startController runs the cluster controller in-process against the host,
// once per package.
func startController(t *testing.T) {
	t.Helper()
	testenv.Need(t, env)
	startOnce.Do(func() {
		ctx := context.Background()
		// Controller logs go to stderr, which go test shows for failures.
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig()))
		opts := manager.DefaultOptions()
		opts.LeaderElect, opts.MetricsAddr, opts.ProbeAddr = false, "0", "0"
		// The controller runs as the controller-manager's ServiceAccount
		// with the shipped role; the tests act as the admin.
		if err := manager.PrepareHost(ctx, env.ControllerConfig(t), opts); err != nil {
			t.Fatalf("prepare host: %v", err)
		}
		mgr, err := manager.New(env.ControllerConfig(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		// Tokens are renewed as soon as 0.01% of their lifetime has
		// passed, so that a test sees it (then at most once a minute).
		reconciler = &cluster.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("test"), Session: testSession, TokenRenewal: 0.0001}
		if err := reconciler.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
		if hostClient, err = client.New(env.Host.Config, client.Options{Scheme: mgr.GetScheme()}); err != nil {
			t.Fatal(err)
		}
		go func() {
			if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
				fmt.Fprintf(os.Stderr, "manager: %v\n", err)
			}
		}()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			t.Fatal("manager cache did not sync")
		}
	})
	if reconciler == nil {
		t.Fatal("controller failed to start in an earlier test")
	}
}

// register creates the credentials Secret (bound to the MemberCluster by
// its label) and MemberCluster name for a member of the environment, using
// the admin token unless token is set. When the test ends it deletes both
// and, once the session is gone, removes the claim the controller recorded
// in the member, so that later tests may register the member under another
// name.
func register(t *testing.T, name string, m *testenv.Cluster, endpoint, token string) *v1alpha1.MemberCluster {
	t.Helper()
	ctx := context.Background()
	if endpoint == "" {
		endpoint = m.Config.Host
	}
	if token == "" {
		token = m.Config.BearerToken
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha1.SystemNamespace, Labels: map[string]string{v1alpha1.LabelMemberCluster: name}},
		Data:       map[string][]byte{member.KeyToken: []byte(token), member.KeyCACert: m.Config.CAData},
	}
	if err := hostClient.Create(ctx, secret); err != nil {
		t.Fatalf("create Secret: %v", err)
	}
	mc := &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.MemberClusterSpec{APIEndpoint: endpoint, SecretRef: &v1alpha1.SecretReference{Name: name}},
	}
	if err := hostClient.Create(ctx, mc); err != nil {
		t.Fatalf("create MemberCluster: %v", err)
	}
	t.Cleanup(func() {
		_ = hostClient.Delete(ctx, mc)
		_ = hostClient.Delete(ctx, secret)
		releaseClaim(t, name, m)
	})
	return mc
}

// releaseClaim waits until the session of name is gone and removes its claim
// from the member's flotilla-system namespace, if the claim is name's.
func releaseClaim(t *testing.T, name string, m *testenv.Cluster) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "session of "+name+" stopped", func(context.Context) error {
		if reconciler.Pool.Current(name) != nil {
			return fmt.Errorf("session still running")
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "claim of "+name+" removed from "+m.Name, func(ctx context.Context) error {
		ns, err := m.Client.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && ns.Annotations[v1alpha1.AnnotationClusterName] != name) {
			return nil
		}
		if err != nil {
			return err
		}
		delete(ns.Annotations, v1alpha1.AnnotationControlPlaneID)
		delete(ns.Annotations, v1alpha1.AnnotationClusterName)
		_, err = m.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		return err
	})
}

func get(ctx context.Context, name string) (*v1alpha1.MemberCluster, error) {
	mc := &v1alpha1.MemberCluster{}
	return mc, hostClient.Get(ctx, types.NamespacedName{Name: name}, mc)
}

// waitReady waits for the Ready condition to have status and reason.
func waitReady(t *testing.T, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *v1alpha1.MemberCluster {
	t.Helper()
	var mc *v1alpha1.MemberCluster
	testenv.Eventually(t, timeout, fmt.Sprintf("%s Ready=%s (%s)", name, status, reason), func(ctx context.Context) error {
		var err error
		if mc, err = get(ctx, name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Ready condition is %+v", c)
		}
		return nil
	})
	return mc
}

func hasTaint(mc *v1alpha1.MemberCluster, key string) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func availableCPU(ctx context.Context, name string) (resource.Quantity, error) {
	mc, err := get(ctx, name)
	if err != nil {
		return resource.Quantity{}, err
	}
	q, ok := mc.Status.Resources.Available[corev1.ResourceCPU]
	if !ok {
		return resource.Quantity{}, fmt.Errorf("no available cpu in status yet: %+v", mc.Status.Resources)
	}
	return q, nil
}

func TestReadyMemberReportsVersionResourcesAndCapacity(t *testing.T) {
	startController(t)
	m := env.Members[0]
	register(t, "capacity", m, "", "")
	mc := waitReady(t, "capacity", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	// Discovery and the node and pod caches fill in independently.
	testenv.Eventually(t, 30*time.Second, "version, API resources, node count and allocatable cpu", func(ctx context.Context) error {
		mc, _ = get(ctx, "capacity")
		alloc := mc.Status.Resources.Allocatable[corev1.ResourceCPU]
		if mc.Status.KubernetesVersion == "" || len(mc.Status.APIResources) == 0 ||
			mc.Status.NodeCount != 2 || mc.Status.SchedulableNodeCount != 2 || alloc.Cmp(resource.MustParse("8")) != 0 {
			return fmt.Errorf("version %q, %d API resources, nodes %d/%d, allocatable cpu %s", mc.Status.KubernetesVersion,
				len(mc.Status.APIResources), mc.Status.NodeCount, mc.Status.SchedulableNodeCount, alloc.String())
		}
		return nil
	})
	if !strings.HasPrefix(mc.Status.KubernetesVersion, "v1.36.") {
		t.Errorf("kubernetesVersion = %q, want v1.36.x", mc.Status.KubernetesVersion)
	}
	found := false
	for _, r := range mc.Status.APIResources {
		if r.Group == "apps" && r.Version == "v1" && r.Resource == "deployments" && r.Kind == "Deployment" && r.Scope == v1alpha1.ScopeNamespaced {
			found = true
		}
		if strings.Contains(r.Resource, "/") {
			t.Errorf("subresource %s listed in apiResources", r.Resource)
		}
	}
	if !found {
		t.Errorf("apps/v1 deployments missing from %d apiResources", len(mc.Status.APIResources))
	}
	if hasTaint(mc, v1alpha1.TaintUnreachable) || hasTaint(mc, v1alpha1.TaintNotReady) {
		t.Errorf("ready member has managed taints: %v", mc.Spec.Taints)
	}

	// Pods that request cpu lower the available cpu within seconds; deleting
	// them gives it back.
	ctx := context.Background()
	before, err := availableCPU(ctx, "capacity")
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	dep := testenv.MakeDeployment("burn", ns).Replicas(3).CPU("500m").Obj()
	if _, err := m.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := before.DeepCopy()
	want.Sub(resource.MustParse("1500m"))
	testenv.Eventually(t, 30*time.Second, "available cpu "+want.String(), func(ctx context.Context) error {
		got, err := availableCPU(ctx, "capacity")
		if err != nil {
			return err
		}
		if got.Cmp(want) != 0 {
			return fmt.Errorf("available cpu %s", got.String())
		}
		return nil
	})
	if err := m.Client.AppsV1().Deployments(ns).Delete(ctx, "burn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "available cpu back to "+before.String(), func(ctx context.Context) error {
		got, err := availableCPU(ctx, "capacity")
		if err != nil {
			return err
		}
		if got.Cmp(before) != 0 {
			return fmt.Errorf("available cpu %s", got.String())
		}
		return nil
	})
}
