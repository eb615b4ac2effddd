package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/gateway"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestDeletePodGoesToItsMember: `kubectl delete pod` through the gateway
// deletes the pod in the member that runs it; a name two members share
// is refused with the way to name one (name@member), which then works.
func TestDeletePodGoesToItsMember(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	a, b := env.Members[0].Client, env.Members[1].Client
	makePod(t, b, ns, "solo", nil)
	makePod(t, a, ns, "twin", nil)
	makePod(t, b, ns, "twin", nil)
	admin := adminThrough(t, gw)
	testenv.Eventually(t, 30*time.Second, "the pods cached", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) != 3 {
			return fmt.Errorf("pods %v", podNames(l.Items))
		}
		return nil
	})
	zero := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "solo", zero); err != nil {
		t.Fatalf("delete solo through the gateway: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "solo gone from beta", func(ctx context.Context) error {
		if _, err := b.CoreV1().Pods(ns).Get(ctx, "solo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("solo in beta: %v", err)
		}
		return nil
	})
	err := admin.CoreV1().Pods(ns).Delete(ctx, "twin", zero)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "twin@alpha") {
		t.Errorf("delete of a name in two members: %v, want 409 naming twin@alpha", err)
	}
	if p, err := admin.CoreV1().Pods(ns).Get(ctx, "twin@beta", metav1.GetOptions{}); err != nil || p.Labels["flotilla.io/cluster"] != "beta" {
		t.Errorf("get twin@beta: %v (err %v)", p.Labels, err)
	}
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "twin@beta", zero); err != nil {
		t.Fatalf("delete twin@beta: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "twin gone from beta only", func(ctx context.Context) error {
		if _, err := b.CoreV1().Pods(ns).Get(ctx, "twin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("twin in beta: %v", err)
		}
		_, err := a.CoreV1().Pods(ns).Get(ctx, "twin", metav1.GetOptions{})
		return err
	})
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "twin@gamma", metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "not found in member gamma") {
		t.Errorf("get twin@gamma: %v, want 404 naming the member", err)
	}
}

// TestExecNeedsCreate: a user who may get pods/exec but not create it
// (what a WebSocket exec's GET is authorized as) is refused, as by a
// kube-apiserver, before anything reaches the member.
func TestExecNeedsCreate(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "shell", nil)
	peeker := as(t, gw, serviceAccountWithRole(t, ns, "peeker", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "pods/exec"}, Verbs: []string{"get", "list"}}))
	testenv.Eventually(t, 30*time.Second, "the pod cached and readable by the peeker", func(ctx context.Context) error {
		_, err := peeker.CoreV1().Pods(ns).Get(ctx, "shell", metav1.GetOptions{})
		return err
	})
	err := peeker.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("shell").SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "pods/exec"`) {
		t.Errorf("exec by GET without create: %v, want 403 naming create on pods/exec", err)
	}
	// Naming the pod's member (shell@alpha) needs create on the pod's own
	// name too, as the host would check it.
	named := as(t, gw, serviceAccountWithRole(t, ns, "named",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "pods/exec"}, Verbs: []string{"get"}, ResourceNames: []string{"shell", "shell@alpha"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}, ResourceNames: []string{"shell@alpha"}}))
	testenv.Eventually(t, 30*time.Second, "the pod readable by its name", func(ctx context.Context) error {
		_, err := named.CoreV1().Pods(ns).Get(ctx, "shell", metav1.GetOptions{})
		return err
	})
	err = named.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("shell@alpha").SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "pods/exec"`) || !strings.Contains(err.Error(), `"shell"`) {
		t.Errorf("exec by GET of shell@alpha with create on that name only: %v, want 403 naming create on pods/exec of shell", err)
	}
}

// TestNoStreamsIntoSystemNamespaces: even an admin gets no exec, attach
// or port-forward into a member's kube-system through the gateway by
// default (the member's own components run there); --no-streams-in ""
// lifts it, and the request then reaches the member.
func TestNoStreamsIntoSystemNamespaces(t *testing.T) {
	joinMembers(t)
	ctx := context.Background()
	name := "sys-shell"
	memberNamespace(t, "kube-system")
	makePod(t, env.Members[0].Client, "kube-system", name, nil)
	t.Cleanup(func() {
		_ = env.Members[0].Client.CoreV1().Pods("kube-system").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	stream := func(admin kubernetes.Interface, sub string) error {
		return admin.CoreV1().RESTClient().Post().Namespace("kube-system").Resource("pods").Name(name).SubResource(sub).
			Param("command", "true").Param("stdout", "true").Do(ctx).Error()
	}
	admin := adminThrough(t, startGateway(t))
	testenv.Eventually(t, 30*time.Second, "the kube-system pod cached", func(ctx context.Context) error {
		_, err := admin.CoreV1().Pods("kube-system").Get(ctx, name, metav1.GetOptions{})
		return err
	})
	for _, sub := range []string{"exec", "attach", "portforward"} {
		err := stream(admin, sub)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "does not carry "+sub+" into namespace kube-system") {
			t.Errorf("%s into kube-system: %v, want 403 naming --no-streams-in", sub, err)
		}
	}
	open := adminThrough(t, startGateway(t, func(o *gateway.Options) { o.NoStreamsIn = nil }))
	testenv.Eventually(t, 30*time.Second, "the kube-system pod cached by the second gateway", func(ctx context.Context) error {
		_, err := open.CoreV1().Pods("kube-system").Get(ctx, name, metav1.GetOptions{})
		return err
	})
	// The member answers now: it looks for the pod's node (node-x, which
	// does not exist in a member without kubelets).
	if err := stream(open, "exec"); err == nil || !strings.Contains(err.Error(), `"node-x" not found`) {
		t.Errorf("exec with --no-streams-in empty: %v, want the member's answer that node-x is not found", err)
	}
}

// TestRequestsAsTheHostWouldServeThem: requests without credentials are
// refused (401) except the health checks, and with --anonymous-auth go to
// the host's RBAC as system:anonymous; a pod's log cannot be read by a
// watch path (which would be authorized as watch on pods/log); a list of
// pods across namespaces by name works, and a watch of NAME@member sees
// that member's object only.
func TestRequestsAsTheHostWouldServeThem(t *testing.T) {
	joinMembers(t)
	ctx := context.Background()
	gw := startGateway(t)
	anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(gw))
	err := anon.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods").Do(ctx).Error()
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("a list without credentials: %v, want 401", err)
	}
	if _, err := anon.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		t.Errorf("/readyz without credentials: %v", err)
	}
	open := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(startGateway(t, func(o *gateway.Options) { o.AnonymousAuth = true })))
	err = open.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"system:anonymous"`) {
		t.Errorf("a list without credentials, --anonymous-auth: %v, want 403 for system:anonymous", err)
	}

	ns := env.Namespace(t)
	memberNamespace(t, ns)
	twin := "twin-" + ns // unique across namespaces: other tests have twins
	makePod(t, env.Members[0].Client, ns, twin, nil)
	makePod(t, env.Members[1].Client, ns, twin, nil)
	admin := adminThrough(t, gw)
	testenv.Eventually(t, 30*time.Second, "both twins listed across namespaces by name", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + twin})
		if err != nil {
			return err
		}
		if got := podNames(l.Items); !slices.Equal(got, []string{"alpha/" + twin, "beta/" + twin}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	})
	err = admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/watch/namespaces", ns, "pods", twin+"@alpha", "log").Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("a pod's log by a watch path: %v, want 404 as from a kube-apiserver", err)
	}
	w, err := admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + twin + "@beta"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := nextEvents(t, w, 1); !slices.Equal(got, []string{"ADDED beta/" + twin}) {
		t.Errorf("watch of %s@beta: %v", twin, got)
	}
}
