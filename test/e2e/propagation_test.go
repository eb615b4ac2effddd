package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var members = []string{"member-1", "member-2", "member-3"}

// TestPropagation drives propagation the way a user does: objects and
// policies applied to the host, results read from the members and from the
// host objects' status.
func TestPropagation(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	f := startFed(t)

	t.Run("a divided Deployment runs 2/2/2, takes its ConfigMap along, scales, takes an override and is deleted everywhere", func(t *testing.T) {
		ns := f.namespace(t, "divide")
		f.create(t, configMap(ns, "web-config"))
		f.create(t, deployment(ns, "web", 6, "web-config"))
		f.create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}})
		f.create(t, &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}, {APIVersion: "v1", Kind: "Service", Namespace: ns}},
			Placement:         v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
		}})
		start := time.Now()
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 2, "member-2": 2, "member-3": 2})
		t.Logf("2/2/2 Ready pods in the members %s after the policy was created", time.Since(start).Round(100*time.Millisecond))
		testenv.Eventually(t, 30*time.Second, "the ConfigMap (a follower) and the Service in every member", func(ctx context.Context) error {
			for _, m := range members {
				if _, err := f.typed[m].CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
					return fmt.Errorf("ConfigMap web-config in %s: %v", m, err)
				}
				if _, err := f.typed[m].CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
					return fmt.Errorf("Service web in %s: %v", m, err)
				}
			}
			return nil
		})
		f.waitHostReady(t, ns, "web", 6)
		f.rolloutStatus(t, ns, "web")

		f.scale(t, ns, "web", 9)
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 3, "member-2": 3, "member-3": 3})
		f.waitHostReady(t, ns, "web", 9)
		f.rolloutStatus(t, ns, "web")

		f.create(t, &v1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "eu-image"}, Spec: v1alpha1.OverrideSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			Rules: []v1alpha1.OverrideRule{{
				TargetClusters: v1alpha1.ClusterTarget{ClusterNames: []string{"member-2"}},
				Overriders:     v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Tag: "2.0-eu"}}},
			}},
		}})
		f.waitImages(t, ns, "web", map[string]string{"member-1": "registry.example.com/web:1.0", "member-2": "registry.example.com/web:2.0-eu", "member-3": "registry.example.com/web:1.0"})

		if err := f.host.Delete(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 60*time.Second, "the Deployment gone from every member and from the host", func(ctx context.Context) error {
			for _, m := range members {
				if _, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Deployment in %s: %v", m, err)
				}
			}
			err := f.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("host Deployment: %v", err)
			}
			return nil
		})
		// The ConfigMap is a host object of its own: its copies stay until it
		// is deleted (a running pod may still need it).
		for _, m := range members {
			if _, err := f.typed[m].CoreV1().ConfigMaps(ns).Get(context.Background(), "web-config", metav1.GetOptions{}); err != nil {
				t.Errorf("ConfigMap in %s after the Deployment was deleted: %v", m, err)
			}
		}
		if err := f.host.Delete(context.Background(), configMap(ns, "web-config")); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 60*time.Second, "the ConfigMap gone from every member once deleted in the host", func(ctx context.Context) error {
			for _, m := range members {
				if _, err := f.typed[m].CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("ConfigMap in %s: %v", m, err)
				}
			}
			return nil
		})
	})

	t.Run("the sample make up applies works as the README says", func(t *testing.T) {
		cmd := exec.Command("kubectl", "apply", "-f", filepath.Join(repoRoot, "config", "samples", "propagation.yaml"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+f.kubeconfig(localenv.HostName))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply the sample: %v\n%s", err, out)
		}
		f.waitMemberReplicas(t, "demo", "web", map[string]int32{"member-1": 2, "member-2": 2, "member-3": 2})
		f.waitHostReady(t, "demo", "web", 6)
		f.rolloutStatus(t, "demo", "web")
	})

	t.Run("a member-side image edit is reverted and a member-side label stays", func(t *testing.T) {
		ns := f.namespace(t, "drift")
		f.create(t, deployment(ns, "api", 1, ""))
		f.create(t, namespacedPolicy(ns, "all", []string{"member-1"}))
		f.waitMemberReplicas(t, ns, "api", map[string]int32{"member-1": 1})
		m1 := f.typed["member-1"].AppsV1().Deployments(ns)
		patch := `{"metadata":{"labels":{"team":"payments"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"evil.example.com/miner:1"}]}}}}`
		if _, err := m1.Patch(context.Background(), "api", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		f.waitImages(t, ns, "api", map[string]string{"member-1": "registry.example.com/api:1.0"})
		t.Logf("image drift reverted in %s", time.Since(start).Round(100*time.Millisecond))
		d, err := m1.Get(context.Background(), "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels["team"] != "payments" || d.Labels[v1alpha1.LabelManaged] != "true" {
			t.Errorf("member labels = %v, want team=payments kept and %s=true", d.Labels, v1alpha1.LabelManaged)
		}
	})

	t.Run("an existing member Deployment is adopted without restarting its pods; without adopt it is a Conflict", func(t *testing.T) {
		ns := f.namespace(t, "adopt")
		if _, err := f.typed["member-1"].CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"legacy", "other"} {
			if _, err := f.typed["member-1"].AppsV1().Deployments(ns).Create(context.Background(), deployment(ns, name, 2, ""), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		f.waitMemberReplicas(t, ns, "legacy", map[string]int32{"member-1": 2})
		before := f.podUIDs(t, "member-1", ns, "app=legacy")
		legacy := deployment(ns, "legacy", 2, "")
		legacy.Annotations = map[string]string{v1alpha1.AnnotationConflictResolution: "adopt"}
		f.create(t, legacy)
		f.create(t, deployment(ns, "other", 2, ""))
		f.create(t, namespacedPolicy(ns, "all", []string{"member-1"}))
		f.waitPropagation(t, ns, "legacy.deployment.apps", "member-1", v1alpha1.PropagationOK)
		f.waitPropagation(t, ns, "other.deployment.apps", "member-1", v1alpha1.PropagationConflict)
		d, err := f.typed["member-1"].AppsV1().Deployments(ns).Get(context.Background(), "legacy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels[v1alpha1.LabelManaged] != "true" {
			t.Errorf("adopted Deployment labels = %v", d.Labels)
		}
		f.waitHostReady(t, ns, "legacy", 2)
		if after := f.podUIDs(t, "member-1", ns, "app=legacy"); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("pods changed by the adoption: before %v, after %v", before, after)
		}
		other, err := f.typed["member-1"].AppsV1().Deployments(ns).Get(context.Background(), "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, managed := other.Labels[v1alpha1.LabelManaged]; managed {
			t.Errorf("the unadopted Deployment was touched: labels %v", other.Labels)
		}
	})

	t.Run("a CRD and a CR created after the controller started are propagated", func(t *testing.T) {
		ns := f.namespace(t, "crd")
		f.grantExampleKinds(t)
		crd := widgetCRD()
		f.create(t, crd)
		f.create(t, &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{
				{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.GetName()},
				{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns},
			},
		}})
		testenv.Eventually(t, 30*time.Second, "Widget kind served by the host", func(ctx context.Context) error {
			_, err := f.typed[localenv.HostName].Discovery().ServerResourcesForGroupVersion("example.com/v1")
			return err
		})
		f.create(t, widget(ns, "w1", 3))
		start := time.Now()
		testenv.Eventually(t, 60*time.Second, "Widget w1 in every member", func(ctx context.Context) error {
			for _, m := range members {
				b, err := f.typed[m].Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces", ns, "widgets", "w1").DoRaw(ctx)
				if err != nil {
					return fmt.Errorf("%s: %v", m, err)
				}
				if !strings.Contains(string(b), `"size":3`) {
					return fmt.Errorf("%s: %s", m, b)
				}
			}
			return nil
		})
		t.Logf("Widget in all members %s after it was created", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("a bad override fails one cluster with its reason, the others are updated, no hot loop", func(t *testing.T) {
		ns := f.namespace(t, "badoverride")
		f.create(t, deployment(ns, "web", 3, ""))
		f.create(t, namespacedPolicy(ns, "all", nil))
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 3, "member-2": 3, "member-3": 3})
		f.create(t, &v1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}, Spec: v1alpha1.OverrideSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Rules: []v1alpha1.OverrideRule{{
				TargetClusters: v1alpha1.ClusterTarget{ClusterNames: []string{"member-3"}},
				Overriders:     v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "replace", Path: "/spec/template/spec/nothing/here", Value: jsonValue(`"x"`)}}},
			}},
		}})
		fo := f.waitPropagation(t, ns, "web.deployment.apps", "member-3", v1alpha1.PropagationApplyFailed)
		for _, c := range fo.Status.Clusters {
			if c.Cluster == "member-3" && !strings.Contains(c.Message, "OverridePolicy/"+ns+"/broken rule 0") {
				t.Errorf("member-3 message %q does not name the rule", c.Message)
			}
		}
		cond := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionPropagated)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != string(v1alpha1.PropagationApplyFailed) {
			t.Errorf("Propagated condition = %+v", cond)
		}
		// A template change still reaches the healthy clusters.
		f.setImage(t, ns, "web", "registry.example.com/web:1.1")
		f.waitImages(t, ns, "web", map[string]string{"member-1": "registry.example.com/web:1.1", "member-2": "registry.example.com/web:1.1", "member-3": "registry.example.com/web:1.0"})
		// No hot loop: the failing object is retried on a back-off, not in a
		// tight loop.
		cm := f.component(t, localenv.HostName, localenv.ControllerManager)
		metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", cm.Ports[0])
		n0 := controllerReconciles(httpGet(t, metricsURL), "propagate")
		window := 20 * time.Second
		n := 0
		testenv.Consistently(t, window, func() error {
			if n = controllerReconciles(httpGet(t, metricsURL), "propagate") - n0; n > 6 {
				return fmt.Errorf("%d propagate reconciles while only a broken override was pending: a hot loop", n)
			}
			return nil
		})
		t.Logf("%d propagate reconciles in %s with the broken override pending", n, window)
	})

	t.Run("a stopped member does not delay the others", func(t *testing.T) {
		ns := f.namespace(t, "slow")
		f.create(t, deployment(ns, "web", 1, ""))
		f.create(t, namespacedPolicy(ns, "all", nil))
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 1, "member-2": 1, "member-3": 1})
		apiserver := f.component(t, "member-3", "kube-apiserver")
		if err := syscall.Kill(apiserver.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := true
		cont := func() {
			if stopped {
				stopped = false
				if err := syscall.Kill(apiserver.PID, syscall.SIGCONT); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(cont)
		start := time.Now()
		f.setImage(t, ns, "web", "registry.example.com/web:2.0")
		f.waitImages(t, ns, "web", map[string]string{"member-1": "registry.example.com/web:2.0", "member-2": "registry.example.com/web:2.0"})
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("healthy members updated %s after the change: the stopped member delayed them", d.Round(100*time.Millisecond))
		} else {
			t.Logf("healthy members updated %s after the change while member-3's apiserver was stopped", d.Round(100*time.Millisecond))
		}
		cont()
		f.waitImages(t, ns, "web", map[string]string{"member-3": "registry.example.com/web:2.0"})
	})

	t.Run("deleting a namespace deletes its objects' copies", func(t *testing.T) {
		ns := f.namespace(t, "nsdelete")
		f.create(t, deployment(ns, "web", 1, ""))
		f.create(t, namespacedPolicy(ns, "all", nil))
		f.waitMemberReplicas(t, ns, "web", map[string]int32{"member-1": 1, "member-2": 1, "member-3": 1})
		if err := f.host.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 90*time.Second, "copies gone from the members and the host namespace gone", func(ctx context.Context) error {
			for _, m := range members {
				if _, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Deployment in %s: %v", m, err)
				}
			}
			if err := f.host.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("host namespace: %v", err)
			}
			return nil
		})
	})

	n := restartWorkloads(t)
	t.Run(fmt.Sprintf("a restarted controller-manager with %d workloads writes nothing to members", n), func(t *testing.T) {
		restartWritesNothing(t, f, n)
	})
}

// deployment is a Deployment template with one container; a ConfigMap name
// mounts that ConfigMap.
func deployment(ns, name string, replicas int32, configMap string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/" + name + ":1.0"}}},
			},
		},
	}
	if configMap != "" {
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}
		d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}}
	}
	return d
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"greeting": "hello"}}
}

// namespacedPolicy propagates every Deployment of ns to clusters (all when
// nil), duplicated.
func namespacedPolicy(ns, name string, clusters []string) *v1alpha1.PropagationPolicy {
	return &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.PropagationSpec{
		ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
		Placement:         v1alpha1.Placement{ClusterNames: clusters},
	}}
}

// rolloutStatus runs `kubectl rollout status` against the host, as a user
// would after a change.
func (f *fed) rolloutStatus(t *testing.T, ns, name string) {
	t.Helper()
	cmd := exec.Command("kubectl", "rollout", "status", "deployment/"+name, "-n", ns, "--timeout=60s")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.kubeconfig(localenv.HostName))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "successfully rolled out") {
		t.Fatalf("kubectl rollout status on the host: %v\n%s", err, out)
	}
}

// create creates an object in the host.
func (f *fed) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := f.host.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
