package pull

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/internal/poll"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

const (
	// Two push members and one pull member: three, so that a failed
	// member is evicted after the usual grace period (a federation of
	// two holds evictions for longer, see docs/failover.md).
	push, push2, pull = "member-1", "member-2", "member-3"
	timeout           = 2 * time.Minute
)

// clients returns a host client and typed clients of the members.
func clients(t *testing.T) (client.Client, map[string]kubernetes.Interface) {
	t.Helper()
	if env == nil {
		t.Skip("no environment (-short)")
	}
	hostState, _ := env.Cluster(localenv.HostName)
	cfg, err := localenv.RESTConfig(hostState.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	host, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]kubernetes.Interface{}
	for _, name := range []string{push, push2, pull} {
		cs, _ := env.Cluster(name)
		mcfg, err := localenv.RESTConfig(cs.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		members[name] = kubernetes.NewForConfigOrDie(mcfg)
	}
	return host, members
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := poll.Until(context.Background(), timeout, cond); err != nil {
		t.Fatalf("%s: not true after %s: last seen: %v", what, timeout, err)
	}
}

// applySample applies config/samples/propagation.yaml, as `make up` does.
func applySample(t *testing.T, host client.Client) {
	t.Helper()
	data, err := os.ReadFile(root + "/config/samples/propagation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := host.Patch(context.Background(), u, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// replicasIn waits until each member's copy of demo/web has want ready
// replicas.
func replicasIn(t *testing.T, members map[string]kubernetes.Interface, want int32) {
	t.Helper()
	for name, cs := range members {
		eventually(t, fmt.Sprintf("%s runs %d ready replicas of demo/web", name, want), func(ctx context.Context) error {
			d, err := cs.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if *d.Spec.Replicas != want || d.Status.ReadyReplicas != want {
				return fmt.Errorf("spec %d, ready %d", *d.Spec.Replicas, d.Status.ReadyReplicas)
			}
			return nil
		})
	}
}

// component returns the recorded process of a component of a cluster.
func component(t *testing.T, cluster, name string) localenv.ComponentState {
	t.Helper()
	st, err := localenv.LoadState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := st.Cluster(cluster)
	for _, c := range cs.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s has no component %s", cluster, name)
	return localenv.ComponentState{}
}

// stop SIGSTOPs a component and returns what SIGCONTs it (once; also at
// the end of the test).
func stop(t *testing.T, cluster, name string) (resume func()) {
	t.Helper()
	pid := component(t, cluster, name).PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// readyReason waits until the pull member's Ready condition has status want
// and returns its reason.
func readyReason(t *testing.T, host client.Client, want metav1.ConditionStatus) string {
	t.Helper()
	var reason string
	eventually(t, fmt.Sprintf("MemberCluster %s Ready=%s", pull, want), func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := host.Get(ctx, types.NamespacedName{Name: pull}, mc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != want {
			return fmt.Errorf("Ready: %+v", c)
		}
		reason = c.Reason
		return nil
	})
	return reason
}

// TestPushAndPullSideBySide drives the README sample over two push members
// and one pull member: the Divide split, scaling, an override of the pull
// member's copy, drift revert on the pull member, a host apiserver outage
// (the agent keeps reverting drift), a killed agent (the cluster turns
// Unknown, its workloads keep running and fail over to the push members
// after the usual thresholds; `flotilla up` restarts it) and deletion. The
// host holds no credential for the pull member.
func TestPushAndPullSideBySide(t *testing.T) {
	host, members := clients(t)
	ctx := context.Background()

	mc := &v1alpha1.MemberCluster{}
	if err := host.Get(ctx, types.NamespacedName{Name: pull}, mc); err != nil {
		t.Fatal(err)
	}
	if mc.Spec.SyncMode != v1alpha1.SyncModePull || mc.Spec.SecretRef != nil || mc.Spec.APIEndpoint != "" {
		t.Fatalf("%s: syncMode %s, secretRef %v, endpoint %q; want Pull with neither", pull, mc.Spec.SyncMode, mc.Spec.SecretRef, mc.Spec.APIEndpoint)
	}
	secrets := &corev1.SecretList{}
	if err := host.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Labels[v1alpha1.LabelMemberCluster] == pull || (s.Namespace == v1alpha1.SystemNamespace && s.Name == pull) {
			t.Errorf("the host holds Secret %s/%s for the pull member", s.Namespace, s.Name)
		}
	}

	applySample(t, host)
	replicasIn(t, members, 2) // 6 divided over three members
	eventually(t, "the host's demo/web shows 6 ready replicas", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := host.Get(ctx, types.NamespacedName{Namespace: "demo", Name: "web"}, d); err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 6 {
			return fmt.Errorf("ready %d", d.Status.ReadyReplicas)
		}
		return nil
	})
	if _, err := members[pull].CoreV1().ConfigMaps("demo").Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap did not follow the Deployment to the pull member: %v", err)
	}

	// Scale.
	// Status writers (the status controller, the members' controllers)
	// race with these updates: retry on conflict, as kubectl does.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale := &appsv1.Deployment{}
		if err := host.Get(ctx, types.NamespacedName{Namespace: "demo", Name: "web"}, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = ptr.To(int32(9))
		return host.Update(ctx, scale)
	}); err != nil {
		t.Fatal(err)
	}
	replicasIn(t, members, 3)

	// Override: the pull member's copy gets its own registry and label,
	// the push members' copies do not.
	override := &v1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-pull"}, Spec: v1alpha1.OverrideSpec{
		ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		Rules: []v1alpha1.OverrideRule{{
			TargetClusters: v1alpha1.ClusterTarget{ClusterNames: []string{pull}},
			Overriders: v1alpha1.Overriders{
				Image:  []v1alpha1.ImageOverrider{{Registry: "registry.edge.example.com"}},
				Labels: &v1alpha1.MapOverrider{Set: map[string]string{"example.com/site": "edge"}},
			},
		}},
	}}
	if err := host.Create(ctx, override); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the override reaches the pull member's copy", func(ctx context.Context) error {
		d, err := members[pull].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.edge.example.com/web:1.0" || d.Labels["example.com/site"] != "edge" {
			return fmt.Errorf("image %s, labels %v", img, d.Labels)
		}
		return nil
	})
	for _, m := range []string{push, push2} {
		d, err := members[m].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Spec.Template.Spec.Containers[0].Image != "registry.example.com/web:1.0" || d.Labels["example.com/site"] != "" {
			t.Errorf("%s's copy after an override for %s only: %v", m, pull, err)
		}
	}

	// Drift on the pull member is reverted, also while the host's
	// apiserver is stopped.
	drift := func(what string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := members[pull].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Replicas = ptr.To(int32(1))
			d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/web:drifted"
			_, err = members[pull].AppsV1().Deployments("demo").Update(ctx, d, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the agent reverts the pull member's copy to 3 replicas and the overridden image "+what, func(ctx context.Context) error {
			d, err := members[pull].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; *d.Spec.Replicas != 3 || img != "registry.edge.example.com/web:1.0" {
				return fmt.Errorf("replicas %d, image %s", *d.Spec.Replicas, img)
			}
			return nil
		})
	}
	drift("(host up)")
	resume := stop(t, localenv.HostName, "kube-apiserver")
	drift("(host apiserver stopped)")
	resume()

	// A killed agent: the cluster turns Unknown (AgentSilent), its
	// workloads keep running, and after the usual thresholds its replicas
	// fail over to the push members; `flotilla up` restarts the agent.
	agent := component(t, pull, localenv.Agent)
	if err := syscall.Kill(agent.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted { // the next tests need the agent
			_ = command(bin, "up", "--state-dir", stateDir).Run()
		}
	})
	if reason := readyReason(t, host, metav1.ConditionUnknown); reason != "AgentSilent" {
		t.Errorf("Ready=Unknown reason %s, want AgentSilent", reason)
	}
	if d, err := members[pull].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{}); err != nil || d.Status.ReadyReplicas != 3 {
		t.Errorf("the pull member's workload while its agent is dead: %v, ready %d", err, d.Status.ReadyReplicas)
	}
	eventually(t, "the 9 replicas fail over to the push members", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := host.Get(ctx, types.NamespacedName{Namespace: "demo", Name: "web.deployment.apps"}, fo); err != nil {
			return err
		}
		for _, p := range fo.Placement() {
			if p.Cluster == pull {
				return fmt.Errorf("still placed on %s: %v", pull, fo.Placement())
			}
		}
		var ready int32
		for _, m := range []string{push, push2} {
			d, err := members[m].AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			ready += d.Status.ReadyReplicas
		}
		if ready != 9 {
			return fmt.Errorf("%d ready on the push members", ready)
		}
		return nil
	})
	if out, err := command(bin, "up", "--state-dir", stateDir).CombinedOutput(); err != nil {
		t.Fatalf("flotilla up (restart the agent): %v\n%s", err, out)
	}
	restarted = true
	readyReason(t, host, metav1.ConditionTrue)

	// Deletion reaches every member.
	if err := host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	for name, cs := range members {
		eventually(t, name+" no longer has demo/web", func(ctx context.Context) error {
			if _, err := cs.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("get: %v", err)
			}
			return nil
		})
	}
}
