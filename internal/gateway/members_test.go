package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestMemberPodsFromEveryMember: pods of both members through one
// endpoint, with the member's name as a label, selectors, pagination, the
// same name in two members, Table output with a Cluster column, and
// refused writes.
func TestMemberPodsFromEveryMember(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	a, b := env.Members[0].Client, env.Members[1].Client
	makePod(t, a, ns, "web-a", map[string]string{"app": "web"})
	makePod(t, b, ns, "web-b", map[string]string{"app": "web"})
	makePod(t, a, ns, "same", nil)
	makePod(t, b, ns, "same", nil)
	admin, warned := adminWithWarnings(t, gw)

	want := []string{"alpha/same", "alpha/web-a", "beta/same", "beta/web-b"}
	testenv.Eventually(t, 30*time.Second, "pods of both members listed", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if got := podNames(l.Items); !slices.Equal(got, want) {
			return fmt.Errorf("pods %v, want %v", got, want)
		}
		return nil
	})
	warned.take() // the first lists may come before the members are listed
	if _, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := warned.take(); len(w) != 0 {
		t.Errorf("warnings with every member ready and listed: %q", w)
	}

	// Selectors: the member label, app label, and a field.
	for _, tc := range []struct {
		label, field string
		want         []string
	}{
		{label: v1alpha1.LabelCluster + "=beta", want: []string{"beta/same", "beta/web-b"}},
		{label: "app=web", want: []string{"alpha/web-a", "beta/web-b"}},
		{field: "metadata.name=same", want: []string{"alpha/same", "beta/same"}},
		{field: "spec.nodeName=node-x,metadata.name!=same", want: []string{"alpha/web-a", "beta/web-b"}},
	} {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: tc.label, FieldSelector: tc.field})
		if err != nil {
			t.Fatalf("labels %q fields %q: %v", tc.label, tc.field, err)
		}
		if got := podNames(l.Items); !slices.Equal(got, tc.want) {
			t.Errorf("labels %q fields %q: %v, want %v", tc.label, tc.field, got, tc.want)
		}
	}
	if _, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.containers=x"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.containers") {
		t.Errorf("unsupported field selector: %v, want 400 field label not supported", err)
	}

	// Pages of one item cover everything once, with the first page's
	// resourceVersion.
	var paged []corev1.Pod
	opts := metav1.ListOptions{Limit: 1}
	first := ""
	for {
		l, err := admin.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = l.ResourceVersion
		} else if l.ResourceVersion != first {
			t.Errorf("page resourceVersion %s, want the first page's %s", l.ResourceVersion, first)
		}
		paged = append(paged, l.Items...)
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if got := podNames(paged); !slices.Equal(got, want) {
		t.Errorf("paged list %v, want %v", got, want)
	}

	// A get of a name in both members: the first member's, with a warning.
	p, err := admin.CoreV1().Pods(ns).Get(ctx, "same", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels[v1alpha1.LabelCluster] != "alpha" {
		t.Errorf("get same: from %q, want alpha (first by name)", p.Labels[v1alpha1.LabelCluster])
	}
	if w := warned.take(); len(w) != 1 || !strings.Contains(w[0], "alpha and beta") {
		t.Errorf("get of a name in two members: warnings %q, want one naming both", w)
	}
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods "nope" not found`) {
		t.Errorf("get of an absent pod: %v, want 404 pods \"nope\" not found", err)
	}
	if len(p.ManagedFields) != 0 {
		t.Errorf("managed fields served: %v", p.ManagedFields)
	}

	// Table: kubectl's columns plus Cluster.
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/"+ns+"/pods").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(raw, &tbl); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if len(cols) < 6 || cols[0] != "Name" || cols[1] != "Cluster" || cols[3] != "Status" {
		t.Errorf("Table columns %v, want Name, Cluster, Ready, Status, ...", cols)
	}
	var rows []string
	for _, r := range tbl.Rows {
		rows = append(rows, fmt.Sprintf("%v/%v", r.Cells[1], r.Cells[0]))
		if len(r.Object.Raw) == 0 || !strings.Contains(string(r.Object.Raw), "PartialObjectMetadata") {
			t.Errorf("row %v without its object's metadata: %s", r.Cells, r.Object.Raw)
		}
	}
	if wantRows := []string{"alpha/same", "beta/same", "alpha/web-a", "beta/web-b"}; !slices.Equal(rows, wantRows) {
		t.Errorf("Table rows %v, want %v (namespace, name, member order)", rows, wantRows)
	}

	// Writes go to the host: a Pod created through the gateway is a host
	// template (propagated by the controller-manager, which this test
	// does not run); a subresource the gateway does not serve is 405.
	if _, err := env.Host.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tmpl := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "template"}, Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "a", Image: "b"}}}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a pod through the gateway: %v", err)
	} else if _, err := env.Host.Client.CoreV1().Pods(ns).Get(ctx, "template", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod created through the gateway is not on the host: %v", err)
	}
	err = admin.CoreV1().RESTClient().Put().Namespace(ns).Resource("pods").Name("web-a").SubResource("status").Body([]byte("{}")).Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) || !strings.Contains(err.Error(), "status subresource") {
		t.Errorf("update pods/status through the gateway: %v, want 405", err)
	}
	// A watch of one pod by name sees that pod only.
	one, err := admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/watch/namespaces/"+ns+"/pods/web-b").Param("timeoutSeconds", "1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(one), `"name":"web-b"`) || strings.Contains(string(one), `"name":"web-a"`) || strings.Contains(string(one), `"name":"same"`) {
		t.Errorf("watch of pod web-b by name streamed other pods:\n%s", one)
	}
}

// TestMemberWatch: one watch across members sees pods created and
// deleted in either; a watch resumes from a resourceVersion it was given,
// an unknown resourceVersion is 410 Gone, and a client-go informer (which
// asks for a watch-list first) syncs.
func TestMemberWatch(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	a, b := env.Members[0].Client, env.Members[1].Client
	admin := adminThrough(t, gw)
	makePod(t, a, ns, "first", nil)
	var listRV string
	testenv.Eventually(t, 30*time.Second, "the first pod listed", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("pods %v", podNames(l.Items))
		}
		listRV = l.ResourceVersion
		return nil
	})
	w, err := admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: listRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	makePod(t, b, ns, "second", nil)
	if err := a.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// The two changes are in two members, whose watches feed the gateway
	// independently: either may come first.
	got := nextEvents(t, w, 2)
	if !slices.Equal(slices.Sorted(slices.Values(got)), []string{"ADDED beta/second", "DELETED alpha/first"}) {
		t.Errorf("watch events %v, want ADDED beta/second and DELETED alpha/first", got)
	}
	// Resume from the list's resourceVersion: the same two changes again,
	// in the same order.
	w2, err := admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: listRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if again := nextEvents(t, w2, 2); !slices.Equal(again, got) {
		t.Errorf("resumed watch events %v, want %v", again, got)
	}
	// A resourceVersion of another gateway process (or none of ours).
	_, err = admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "12345"})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from an unknown resourceVersion: %v, want 410", err)
	}

	// An informer through the gateway syncs and sees a later pod.
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(admin.CoreV1().RESTClient(), "pods", ns, fields.Everything()), &corev1.Pod{}, 0, cache.Indexers{})
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	go inf.RunWithContext(ictx)
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	makePod(t, a, ns, "third", nil)
	testenv.Eventually(t, 30*time.Second, "the informer sees the third pod", func(context.Context) error {
		var names []string
		for _, o := range inf.GetStore().List() {
			p := o.(*corev1.Pod)
			names = append(names, p.Labels[v1alpha1.LabelCluster]+"/"+p.Name)
		}
		sort.Strings(names)
		if !slices.Equal(names, []string{"alpha/third", "beta/second"}) {
			return fmt.Errorf("informer has %v", names)
		}
		return nil
	})
}

// nextEvents returns the next n additions and deletions of w.
func nextEvents(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", out)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("watch event %s of %T: %v", ev.Type, ev.Object, ev.Object)
			}
			if ev.Type == watch.Modified {
				continue // the deletion's grace period is recorded first
			}
			out = append(out, fmt.Sprintf("%s %s/%s", ev.Type, p.Labels[v1alpha1.LabelCluster], p.Name))
		case <-deadline:
			t.Fatalf("saw %v, want %d events", out, n)
		}
	}
	return out
}

// TestMemberPodsFollowHostRBAC: a ServiceAccount with pod reads in one
// host namespace sees that namespace's member pods and gets the usual
// 403 for all namespaces.
func TestMemberPodsFollowHostRBAC(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	own := env.Namespace(t)
	memberNamespace(t, own)
	makePod(t, env.Members[1].Client, own, "mine", nil)
	viewer := as(t, gw, serviceAccountWithRole(t, own, "viewer", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}))
	testenv.Eventually(t, 30*time.Second, "the viewer lists its namespace's member pods", func(ctx context.Context) error {
		l, err := viewer.CoreV1().Pods(own).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if got := podNames(l.Items); !slices.Equal(got, []string{"beta/mine"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	})
	_, err := viewer.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot list resource "pods" in API group "" at the cluster scope`) {
		t.Errorf("viewer lists all namespaces: %v, want the usual 403", err)
	}
	_, err = viewer.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("viewer lists nodes: %v, want 403", err)
	}
}

// TestMemberKindScope: a path that does not exist for a member kind's
// scope is the host's 404, even for a user whose RoleBinding allows every
// resource in its namespace: nodes are not listed through a namespace,
// nor is a pod named without its namespace.
func TestMemberKindScope(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "p", nil)
	admin := adminThrough(t, gw)
	nsAdmin := as(t, gw, serviceAccountWithRole(t, ns, "ns-admin", rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}))
	ctx := context.Background()
	node := "node-" + ns
	if _, err := env.Members[0].Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Members[0].Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, 30*time.Second, "the namespace admin sees its pod and the admin the node", func(ctx context.Context) error {
		if _, err := nsAdmin.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err
	})
	for _, tc := range []struct {
		who  string
		cs   kubernetes.Interface
		path string
	}{
		{"namespace admin", nsAdmin, "/api/v1/namespaces/" + ns + "/nodes"},
		{"namespace admin", nsAdmin, "/api/v1/namespaces/" + ns + "/nodes/" + node},
		{"namespace admin", nsAdmin, "/api/v1/watch/namespaces/" + ns + "/nodes"},
		{"admin", admin, "/api/v1/pods/p"},
		{"admin", admin, "/api/v1/pods/p/log"},
	} {
		// A bound: a watch served rather than refused would not end.
		_, err := tc.cs.CoreV1().RESTClient().Get().AbsPath(tc.path).Timeout(30 * time.Second).DoRaw(ctx)
		_, hostErr := env.Host.Client.CoreV1().RESTClient().Get().AbsPath(tc.path).DoRaw(ctx)
		sameError(t, tc.who+" GET "+tc.path, err, hostErr, apierrors.IsNotFound)
	}
}

// TestMissingMemberIsNamed: a member the gateway cannot list is left out
// with a warning, one that is not ready is served as last seen with a
// warning, and neither stalls the list. The warnings say what kind of
// failure it is, never the member's endpoint or the error's text.
func TestMissingMemberIsNamed(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "here", nil)
	admin, warned := adminWithWarnings(t, gw)
	// A member whose apiserver does not answer (nothing listens).
	c := hostClient(t)
	ghost := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
		Spec: v1alpha1.MemberClusterSpec{APIEndpoint: "https://127.0.0.1:1", SecretRef: &v1alpha1.SecretReference{Name: "ghost"}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: v1alpha1.SystemNamespace,
		Labels: map[string]string{v1alpha1.LabelMemberCluster: "ghost"}}, Data: map[string][]byte{"token": []byte("x")}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), ghost)
		_ = c.Delete(context.Background(), secret)
	})
	testenv.Eventually(t, 30*time.Second, "the ghost member named in a warning", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		w := strings.Join(warned.take(), "\n")
		if got := podNames(l.Items); !slices.Equal(got, []string{"alpha/here"}) {
			return fmt.Errorf("pods %v", got)
		}
		if !strings.Contains(w, "member ghost is left out: its pods are not listed: the member's apiserver cannot be reached") {
			return fmt.Errorf("warnings %q", w)
		}
		if strings.Contains(w, "127.0.0.1:1") {
			t.Errorf("a warning names the member's endpoint: %q", w)
		}
		return nil
	})
	if err := setReady(ctx, "beta", false, "Unreachable", "the apiserver does not answer"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = setReady(context.Background(), "beta", true, "Probed", "") })
	testenv.Eventually(t, 30*time.Second, "the not-ready member named in a warning", func(ctx context.Context) error {
		if _, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		w := strings.Join(warned.take(), "\n")
		if !strings.Contains(w, "member beta is not ready (Unreachable): its pods are as last seen") {
			return fmt.Errorf("warnings %q", w)
		}
		if strings.Contains(w, "does not answer") {
			t.Errorf("a warning carries the Ready condition's message: %q", w)
		}
		return nil
	})
}
