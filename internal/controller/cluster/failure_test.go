package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func TestUnreachableEndpointIsReportedAndOthersKeepWorking(t *testing.T) {
	startController(t)
	register(t, "healthy", env.Members[0], "", "")
	waitReady(t, "healthy", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	// Port 1 on loopback refuses connections.
	register(t, "nowhere", env.Members[0], "https://127.0.0.1:1", "")
	mc := waitReady(t, "nowhere", metav1.ConditionUnknown, member.ReasonUnreachable, 30*time.Second)
	offline := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionOffline)
	if offline == nil || offline.Status != metav1.ConditionTrue || !strings.Contains(offline.Message, "connection refused") {
		t.Errorf("Offline condition = %+v, want True mentioning the refused connection", offline)
	}
	testenv.Eventually(t, 30*time.Second, "unreachable taint on nowhere", func(ctx context.Context) error {
		mc, err := get(ctx, "nowhere")
		if err != nil {
			return err
		}
		if !hasTaint(mc, v1alpha1.TaintUnreachable) {
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		}
		return nil
	})

	// The healthy member still gets status updates while the other fails.
	ctx := context.Background()
	var before resource.Quantity
	testenv.Eventually(t, 30*time.Second, "healthy member's capacity known", func(ctx context.Context) error {
		var err error
		before, err = availableCPU(ctx, "healthy")
		return err
	})
	ns := env.Namespace(t)
	if _, err := env.Members[0].Client.AppsV1().Deployments(ns).Create(ctx, testenv.MakeDeployment("one", ns).Replicas(1).CPU("1").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := before.DeepCopy()
	want.Sub(resource.MustParse("1"))
	testenv.Eventually(t, 30*time.Second, "healthy member's available cpu "+want.String(), func(ctx context.Context) error {
		got, err := availableCPU(ctx, "healthy")
		if err != nil {
			return err
		}
		if got.Cmp(want) != 0 {
			return fmt.Errorf("available cpu %s", got.String())
		}
		return nil
	})

	// No hot loop: with nothing changing, the failing member's object is not
	// rewritten during several probe intervals.
	mc, _ = get(ctx, "nowhere")
	noWrites(t, "nowhere", mc.ResourceVersion, 6*testSession.ProbeInterval)
}

// noWrites fails the test if the MemberCluster changes within window after
// resourceVersion rv.
func noWrites(t *testing.T, name, rv string, window time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	gvr := v1alpha1.GroupVersion.WithResource("memberclusters")
	w, err := env.Host.Dynamic.Resource(gvr).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch %s: %v", name, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		t.Fatalf("%s written while nothing changed: %s %v", name, ev.Type, ev.Object)
	}
}

func TestBadTokenThenFixed(t *testing.T) {
	startController(t)
	m := env.Members[1]
	register(t, "badtoken", m, "", "not-a-valid-token")
	mc := waitReady(t, "badtoken", metav1.ConditionFalse, member.ReasonUnauthorized, 30*time.Second)
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(c.Message, "refuses the credentials") {
		t.Errorf("Ready message %q does not explain the refused credentials", c.Message)
	}
	testenv.Eventually(t, 30*time.Second, "not-ready taint", func(ctx context.Context) error {
		mc, err := get(ctx, "badtoken")
		if err != nil {
			return err
		}
		if !hasTaint(mc, v1alpha1.TaintNotReady) || hasTaint(mc, v1alpha1.TaintUnreachable) {
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		}
		return nil
	})
	// Fixing the Secret replaces the session; the member becomes Ready and
	// the taint goes.
	ctx := context.Background()
	secret := &corev1.Secret{}
	if err := hostClient.Get(ctx, types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: "badtoken"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[member.KeyToken] = []byte(m.Config.BearerToken)
	if err := hostClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitReady(t, "badtoken", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	testenv.Eventually(t, 30*time.Second, "not-ready taint removed", func(ctx context.Context) error {
		mc, err := get(ctx, "badtoken")
		if err != nil {
			return err
		}
		if len(mc.Spec.Taints) != 0 {
			return fmt.Errorf("taints %v", mc.Spec.Taints)
		}
		return nil
	})
}

func TestMissingSecretThenCreated(t *testing.T) {
	startController(t)
	ctx := context.Background()
	mc := &v1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "nosecret"},
		Spec:       v1alpha1.MemberClusterSpec{APIEndpoint: env.Members[0].Config.Host, SecretRef: &v1alpha1.SecretReference{Name: "nosecret"}},
	}
	if err := hostClient.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hostClient.Delete(ctx, mc) })
	waitReady(t, "nosecret", metav1.ConditionFalse, member.ReasonSecretNotFound, 30*time.Second)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nosecret", Namespace: v1alpha1.SystemNamespace, Labels: map[string]string{v1alpha1.LabelMemberCluster: "nosecret"}},
		Data:       map[string][]byte{member.KeyToken: []byte(env.Members[0].Config.BearerToken), member.KeyCACert: env.Members[0].Config.CAData},
	}
	if err := hostClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hostClient.Delete(ctx, mc)
		_ = hostClient.Delete(ctx, secret)
		releaseClaim(t, "nosecret", env.Members[0])
	})
	waitReady(t, "nosecret", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
}

// waitTaint waits until the MemberCluster carries exactly the managed taint
// key (or none when key is empty).
func waitTaint(t *testing.T, name, key string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, fmt.Sprintf("%s managed taint %q", name, key), func(ctx context.Context) error {
		mc, err := get(ctx, name)
		if err != nil {
			return err
		}
		var managed []string
		for _, t := range mc.Spec.Taints {
			if t.Key == v1alpha1.TaintUnreachable || t.Key == v1alpha1.TaintNotReady {
				managed = append(managed, t.Key)
			}
		}
		if (key == "" && len(managed) == 0) || (len(managed) == 1 && managed[0] == key) {
			return nil
		}
		return fmt.Errorf("managed taints %v", managed)
	})
}

func TestAPIServerStoppedAndKilled(t *testing.T) {
	startController(t)
	m := env.Members[1]
	register(t, "fragile", m, "", "")
	waitReady(t, "fragile", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)

	// An operator's own taint survives everything below.
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := get(ctx, "fragile")
		if err != nil {
			return err
		}
		mc.Spec.Taints = append(mc.Spec.Taints, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectPreferNoSchedule})
		return hostClient.Update(ctx, mc)
	}); err != nil {
		t.Fatal(err)
	}

	t.Run("SIGSTOP", func(t *testing.T) {
		env.Signal(t, m.Name, "kube-apiserver", syscall.SIGSTOP)
		waitReady(t, "fragile", metav1.ConditionUnknown, member.ReasonUnreachable, 60*time.Second)
		waitTaint(t, "fragile", v1alpha1.TaintUnreachable, 30*time.Second)
		env.Signal(t, m.Name, "kube-apiserver", syscall.SIGCONT)
		waitReady(t, "fragile", metav1.ConditionTrue, member.ReasonReady, 60*time.Second)
		waitTaint(t, "fragile", "", 30*time.Second)
	})
	t.Run("SIGKILL", func(t *testing.T) {
		env.Signal(t, m.Name, "kube-apiserver", syscall.SIGKILL)
		mc := waitReady(t, "fragile", metav1.ConditionUnknown, member.ReasonUnreachable, 60*time.Second)
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "connection refused") {
			t.Errorf("Ready message %q does not say the connection was refused", c.Message)
		}
		waitTaint(t, "fragile", v1alpha1.TaintUnreachable, 30*time.Second)
		env.Restart(t, m.Name, "kube-apiserver")
		waitReady(t, "fragile", metav1.ConditionTrue, member.ReasonReady, 60*time.Second)
		waitTaint(t, "fragile", "", 30*time.Second)
	})
	mc, _ := get(ctx, "fragile")
	if !slices.ContainsFunc(mc.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "example.com/maintenance" }) {
		t.Errorf("operator taint lost: %v", mc.Spec.Taints)
	}
}

func TestCRDInstalledInMemberIsDiscovered(t *testing.T) {
	startController(t)
	m := env.Members[0]
	register(t, "discovery", m, "", "")
	waitReady(t, "discovery", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)
	ctx := context.Background()
	res := m.Client.Discovery().RESTClient().Post().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").
		SetHeader("Content-Type", "application/json").Body([]byte(crd)).Do(ctx)
	if err := res.Error(); err != nil {
		t.Fatalf("create CRD in %s: %v", m.Name, err)
	}
	t.Cleanup(func() {
		_ = m.Client.Discovery().RESTClient().Delete().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").Do(ctx).Error()
	})
	testenv.Eventually(t, 30*time.Second, "widgets.example.com in apiResources", func(ctx context.Context) error {
		mc, err := get(ctx, "discovery")
		if err != nil {
			return err
		}
		for _, r := range mc.Status.APIResources {
			if r.Group == "example.com" && r.Resource == "widgets" && r.Kind == "Widget" {
				return nil
			}
		}
		return fmt.Errorf("%d apiResources, no example.com widgets", len(mc.Status.APIResources))
	})
}

func TestDeletedMemberStopsItsSession(t *testing.T) {
	startController(t)
	ctx := context.Background()
	baseline := runtime.NumGoroutine()
	mc := register(t, "ephemeral", env.Members[0], "", "")
	waitReady(t, "ephemeral", metav1.ConditionTrue, member.ReasonReady, 30*time.Second)
	testenv.Eventually(t, 30*time.Second, "node count known", func(ctx context.Context) error {
		got, err := get(ctx, "ephemeral")
		if err != nil {
			return err
		}
		if got.Status.NodeCount == 0 {
			return fmt.Errorf("no nodes counted yet")
		}
		return nil
	})
	if !slices.Contains(reconciler.Sessions(), "ephemeral") {
		t.Fatalf("no session for ephemeral: %v", reconciler.Sessions())
	}
	if err := hostClient.Delete(ctx, mc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "session stopped", func(context.Context) error {
		if s := reconciler.Sessions(); slices.Contains(s, "ephemeral") {
			return fmt.Errorf("sessions %v", s)
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("goroutines back to %d", baseline), func(context.Context) error {
		if n := runtime.NumGoroutine(); n > baseline {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			return fmt.Errorf("%d goroutines:\n%s", n, memberStacks(buf.String()))
		}
		return nil
	})
}

// memberStacks keeps the goroutine profile entries that involve member
// sessions, informers or HTTP connections.
func memberStacks(profile string) string {
	var out []string
	for _, entry := range strings.Split(profile, "\n\n") {
		if strings.Contains(entry, "internal/member") || strings.Contains(entry, "tools/cache") || strings.Contains(entry, "net/http") {
			out = append(out, entry)
		}
	}
	return strings.Join(out, "\n\n")
}
