package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// TestScheduling drives the scheduler as a user does: policies, profiles,
// webhooks and MemberCluster taints and labels on the host, placements read
// from the members and from the FederatedObjects.
func TestScheduling(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	f := startFed(t)

	t.Run("a NoSchedule-tainted member gets no new replicas but keeps its current ones", func(t *testing.T) {
		ns := f.namespace(t, "taint")
		f.create(t, deployment(ns, "web", 6, ""))
		f.create(t, &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "divide"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement:         v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
		}})
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 2, "member-2": 2, "member-3": 2})
		taint := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
		f.setTaints(t, "member-3", []corev1.Taint{taint})
		t.Cleanup(func() { f.setTaints(t, "member-3", nil) })
		f.scale(t, ns, "web", 12)
		testenv.Eventually(t, 90*time.Second, "12 replicas with member-3 still at 2", func(ctx context.Context) error {
			got := map[string]int32{}
			var total int32
			for _, m := range members {
				d, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("%s: %v", m, err)
				}
				got[m] = d.Status.ReadyReplicas
				total += ptr.Deref(d.Spec.Replicas, 0)
			}
			if total != 12 || got["member-3"] != 2 || got["member-1"]+got["member-2"] != 10 {
				return fmt.Errorf("ready %v, total spec %d", got, total)
			}
			return nil
		})
		// A new workload does not go to member-3 at all.
		f.create(t, deployment(ns, "fresh", 4, ""))
		f.waitMemberReplicas(t, ns, "fresh", map[string]int32{"member-1": 2, "member-2": 2})
		f.waitScheduledMessage(t, ns, "fresh.deployment.apps", "excluded: 1 untolerated taint example.com/maintenance")
	})

	t.Run("changing a member's labels moves a label-selected workload", func(t *testing.T) {
		ns := f.namespace(t, "labels")
		f.create(t, deployment(ns, "api", 1, ""))
		f.create(t, &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gold"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement:         v1alpha1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e.flotilla.io/tier": ns}}},
		}})
		f.setLabel(t, "member-1", "e2e.flotilla.io/tier", ns)
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-1": 1})
		f.setLabel(t, "member-1", "e2e.flotilla.io/tier", "")
		f.setLabel(t, "member-2", "e2e.flotilla.io/tier", ns)
		t.Cleanup(func() { f.setLabel(t, "member-2", "e2e.flotilla.io/tier", "") })
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-2": 1})
	})

	t.Run("a webhook plugin that rejects a cluster removes it from the placement", func(t *testing.T) {
		url := startExampleWebhook(t)
		f.create(t, &v1alpha1.SchedulerPluginWebhook{ObjectMeta: metav1.ObjectMeta{Name: "example"}, Spec: v1alpha1.SchedulerPluginWebhookSpec{
			URL: url, Paths: v1alpha1.WebhookPaths{Filter: "/filter", Score: "/score"},
		}})
		f.create(t, &v1alpha1.SchedulingProfile{ObjectMeta: metav1.ObjectMeta{Name: "with-example"}, Spec: v1alpha1.SchedulingProfileSpec{
			Plugins: v1alpha1.ProfilePlugins{
				Filter: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "webhook/example"}}},
				Score:  v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: "webhook/example"}}},
			},
		}})
		f.setLabel(t, "member-2", "example.com/scheduling", "reject")
		t.Cleanup(func() { f.setLabel(t, "member-2", "example.com/scheduling", "") })
		ns := f.namespace(t, "webhook")
		f.create(t, deployment(ns, "web", 4, ""))
		f.create(t, &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooked"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: v1alpha1.Placement{SchedulingProfile: "with-example",
				ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
		}})
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 2, "member-3": 2})
		f.waitScheduledMessage(t, ns, "web.deployment.apps", "1 rejected by example webhook")
		sp := &v1alpha1.SchedulingProfile{}
		if err := f.host.Get(context.Background(), types.NamespacedName{Name: "with-example"}, sp); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(sp.Status.Conditions, "Valid") {
			t.Errorf("profile conditions %+v, want Valid=True", sp.Status.Conditions)
		}
	})

	t.Run("a workload whose kind a member does not serve avoids that member", func(t *testing.T) {
		f.grantExampleKinds(t)
		crd := widgetCRD()
		crd.Name, crd.Spec.Names = "gadgets.example.com", apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"}
		for _, c := range []string{localenv.HostName, "member-1", "member-2"} { // not member-3
			installCRD(t, f.kubeconfig(c), crd.DeepCopy())
		}
		ns := f.namespace(t, "served")
		f.create(t, &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gadgets"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "example.com/v1", Kind: "Gadget"}},
		}})
		g := widget(ns, "g1", 1)
		g.SetKind("Gadget")
		f.create(t, g)
		// Members rediscover their APIs every 30 s.
		f.waitScheduledMessage(t, ns, "g1.gadget.example.com", "2/3 clusters; excluded: 1 do not serve example.com/v1 Gadget")
		fo := &v1alpha1.FederatedObject{}
		if err := f.host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "g1.gadget.example.com"}, fo); err != nil {
			t.Fatal(err)
		}
		var placed []string
		for _, p := range fo.Placement() {
			placed = append(placed, p.Cluster)
			if p.Replicas != nil || p.OrdinalStart != nil {
				t.Errorf("placement entry %+v, want the whole object (no replicas, no ordinals)", p)
			}
		}
		if got := strings.Join(placed, ","); got != "member-1,member-2" {
			t.Errorf("placement %s, want member-1,member-2", got)
		}
		f.waitPropagation(t, ns, "g1.gadget.example.com", "member-2", v1alpha1.PropagationOK)
	})
}

// setTaints replaces a MemberCluster's operator taints.
func (f *fed) setTaints(t *testing.T, name string, taints []corev1.Taint) {
	t.Helper()
	f.updateMC(t, name, func(mc *v1alpha1.MemberCluster) {
		var kept []corev1.Taint
		for _, tn := range mc.Spec.Taints {
			if tn.Key == v1alpha1.TaintUnreachable || tn.Key == v1alpha1.TaintNotReady {
				kept = append(kept, tn)
			}
		}
		mc.Spec.Taints = append(kept, taints...)
	})
}

// setLabel sets (or, with an empty value, removes) a MemberCluster label.
func (f *fed) setLabel(t *testing.T, name, key, value string) {
	t.Helper()
	f.updateMC(t, name, func(mc *v1alpha1.MemberCluster) {
		if value == "" {
			delete(mc.Labels, key)
			return
		}
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[key] = value
	})
}

func (f *fed) updateMC(t *testing.T, name string, change func(*v1alpha1.MemberCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := f.mc(context.Background(), name)
		if err != nil {
			return err
		}
		change(mc)
		return f.host.Update(context.Background(), mc)
	})
	if err != nil {
		t.Fatalf("update MemberCluster %s: %v", name, err)
	}
}

// waitScheduledMessage waits until a FederatedObject's Scheduled condition
// says msg.
func (f *fed) waitScheduledMessage(t *testing.T, ns, name, msg string) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, fmt.Sprintf("%s/%s Scheduled message contains %q", ns, name, msg), func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := f.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, fo); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
		if c == nil || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("Scheduled condition %+v", c)
		}
		return nil
	})
}

// installCRD creates a CRD in one cluster and waits until it is served.
func installCRD(t *testing.T, kubeconfig string, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	cfg, err := localenv.RESTConfig(kubeconfig)
	if err != nil {
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
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatalf("create CRD in %s: %v", kubeconfig, err)
	}
	testenv.Eventually(t, 30*time.Second, "CRD established in "+kubeconfig, func(ctx context.Context) error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, types.NamespacedName{Name: crd.Name}, got); err != nil {
			return err
		}
		return crds.Established(got)
	})
}

// startExampleWebhook builds and runs examples/scheduler-webhook on a free
// loopback port and returns its URL.
func startExampleWebhook(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scheduler-webhook")
	build := exec.Command("go", "build", "-o", bin, "./examples/scheduler-webhook")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example webhook: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--addr", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	testenv.Eventually(t, 10*time.Second, "example webhook healthy", func(ctx context.Context) error {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
	return url
}
