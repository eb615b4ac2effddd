package rollout_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// kubectl runs kubectl against the host as its admin.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed: %v", err)
	}
	out, err := exec.Command(path, append([]string{"--kubeconfig", env.Host.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// setImage changes the host Deployment's image.
func setImage(t *testing.T, key types.NamespacedName, image string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(context.Background(), key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		return admin.Update(context.Background(), d)
	}); err != nil {
		t.Fatal(err)
	}
}

// memberImages returns each member's copy's image, paused flag and
// updated replicas as "member-1=img/paused/updated".
func memberImages(ctx context.Context, ns, name string) (string, error) {
	var parts []string
	for _, m := range env.Members {
		d, err := m.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%v/%d", m.Name, d.Spec.Template.Spec.Containers[0].Image, d.Spec.Paused, d.Status.UpdatedReplicas))
	}
	return strings.Join(parts, " "), nil
}

// TestKubectlRolloutOnTheHost: kubectl rollout history, pause, resume and
// undo on the host Deployment work on the federated rollout. While the
// host is paused a template change waits in every member (held, paused,
// no pod updated); resume rolls it out; undo brings the previous
// template back, which rolls out too.
func TestKubectlRolloutOnTheHost(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dividePolicy(t, ns)
	key := types.NamespacedName{Namespace: ns, Name: "api"}
	foKey := types.NamespacedName{Namespace: ns, Name: "api.deployment.apps"}
	d := rollingDeployment("api", ns, 6, 1, 1, "200ms")
	d.Spec.Template.Spec.Containers[0].Image = "example.com/api:1"
	if err := admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, key, 6)
	setImage(t, key, "example.com/api:2")
	waitRolledOut(t, key, 6)
	testenv.Eventually(t, waitTimeout, "kubectl rollout history lists revisions 1 and 2", func(ctx context.Context) error {
		out := kubectl(t, "rollout", "history", "deployment/api", "-n", ns)
		if !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
			return fmt.Errorf("%s", out)
		}
		return nil
	})

	kubectl(t, "rollout", "pause", "deployment/api", "-n", ns)
	setImage(t, key, "example.com/api:3")
	testenv.Eventually(t, waitTimeout, "the paused change held in every member", func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionRolledOut)
		got, err := memberImages(ctx, ns, "api")
		if err != nil {
			return err
		}
		want := "member-1=example.com/api:3/true/0 member-2=example.com/api:3/true/0 member-3=example.com/api:3/true/0"
		if c == nil || c.Reason != "Paused" || got != want {
			return fmt.Errorf("RolledOut %+v; members %s, want %s", c, got, want)
		}
		return nil
	})
	kubectl(t, "rollout", "resume", "deployment/api", "-n", ns)
	waitRolledOut(t, key, 6)
	if got, err := memberImages(ctx, ns, "api"); err != nil || got != "member-1=example.com/api:3/false/2 member-2=example.com/api:3/false/2 member-3=example.com/api:3/false/2" {
		t.Errorf("after resume: %s (%v), want api:3 unpaused everywhere", got, err)
	}

	out := kubectl(t, "rollout", "undo", "deployment/api", "-n", ns)
	if !strings.Contains(out, "rolled back") {
		t.Errorf("kubectl rollout undo: %s", out)
	}
	testenv.Eventually(t, waitTimeout, "the undo rolled out in every member", func(ctx context.Context) error {
		got, err := memberImages(ctx, ns, "api")
		if err != nil {
			return err
		}
		if want := "member-1=example.com/api:2/false/2 member-2=example.com/api:2/false/2 member-3=example.com/api:2/false/2"; got != want {
			return fmt.Errorf("members %s, want %s", got, want)
		}
		return nil
	})
	waitRolledOut(t, key, 6)
	if out := kubectl(t, "rollout", "history", "deployment/api", "-n", ns); !strings.Contains(out, "\n4 ") || strings.Contains(out, "\n2 ") {
		t.Errorf("history after the undo: want revision 2 renumbered 4 (as on one cluster):\n%s", out)
	}
}
