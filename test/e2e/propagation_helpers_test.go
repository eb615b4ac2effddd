package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// grantExampleKinds lets the controller-manager read the example.com kinds,
// as whoever propagates custom kinds must: its shipped role covers the
// built-in kinds only. Reading is all it needs (no finalizer is set on
// templates).
func (f *fed) grantExampleKinds(t *testing.T) {
	t.Helper()
	name := "flotilla-controller-manager-example-com"
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"example.com"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: rbac.Namespace, Name: rbac.ServiceAccount}},
		},
	}
	for _, o := range objs {
		if err := f.host.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("grant the controller-manager the example.com kinds: %v", err)
		}
	}
}

// namespace creates a host namespace for one test. Members get it when
// the first object arrives.
func (f *fed) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + prefix + "-"}}
	if err := f.host.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// waitMemberReplicas waits until each listed member runs the Deployment
// with that many ready replicas, and the unlisted members have none.
func (f *fed) waitMemberReplicas(t *testing.T, ns, name string, want map[string]int32) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, fmt.Sprintf("Deployment %s/%s ready replicas %v in the members", ns, name, want), func(ctx context.Context) error {
		var problems []string
		for _, m := range members {
			d, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			n, listed := want[m]
			switch {
			case err != nil && listed:
				problems = append(problems, fmt.Sprintf("%s: %v", m, err))
			case err == nil && !listed:
				problems = append(problems, fmt.Sprintf("%s has a copy", m))
			case err == nil && (ptr.Deref(d.Spec.Replicas, 1) != n || d.Status.ReadyReplicas != n || d.Status.Replicas != n):
				problems = append(problems, fmt.Sprintf("%s: spec %d, ready %d/%d", m, ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas, d.Status.Replicas))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
}

// waitHostReady waits until the host Deployment reports n ready replicas for
// its current generation.
func (f *fed) waitHostReady(t *testing.T, ns, name string, n int32) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("host Deployment %s/%s %d/%d READY", ns, name, n, n), func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := f.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		st := d.Status
		if st.ObservedGeneration != d.Generation || st.ReadyReplicas != n || st.UpdatedReplicas != n || st.AvailableReplicas != n || st.Replicas != n {
			return fmt.Errorf("generation %d, status %+v", d.Generation, st)
		}
		return nil
	})
}

func (f *fed) scale(t *testing.T, ns, name string, n int32) {
	t.Helper()
	f.updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(n) })
}

func (f *fed) setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	f.updateDeployment(t, ns, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

func (f *fed) updateDeployment(t *testing.T, ns, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := f.host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		change(d)
		return f.host.Update(context.Background(), d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitImages waits until each listed member's copy runs that image.
func (f *fed) waitImages(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("images of %s/%s %v", ns, name, want), func(ctx context.Context) error {
		for m, image := range want {
			d, err := f.typed[m].AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("%s: %v", m, err)
			}
			if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
				return fmt.Errorf("%s runs %s", m, got)
			}
		}
		return nil
	})
}

// podUIDs returns the UIDs of a member's pods matching a selector, sorted.
func (f *fed) podUIDs(t *testing.T, member, ns, selector string) []string {
	t.Helper()
	pods, err := f.typed[member].CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range pods.Items {
		uids = append(uids, string(p.UID)+"/"+p.Labels[appsv1.DefaultDeploymentUniqueLabelKey])
	}
	slices.Sort(uids)
	if len(uids) == 0 {
		t.Fatalf("no pods %s in %s/%s", selector, member, ns)
	}
	return uids
}

// waitPropagation waits until a FederatedObject reports reason for a
// cluster and returns it.
func (f *fed) waitPropagation(t *testing.T, ns, name, cluster string, reason v1alpha1.PropagationReason) *v1alpha1.FederatedObject {
	t.Helper()
	fo := &v1alpha1.FederatedObject{}
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("FederatedObject %s/%s: %s %s", ns, name, cluster, reason), func(ctx context.Context) error {
		if err := f.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, fo); err != nil {
			return err
		}
		for _, c := range fo.Status.Clusters {
			if c.Cluster == cluster {
				if c.Reason != reason {
					return fmt.Errorf("%s: %s", c.Reason, c.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("no status for %s: %+v (conditions %+v)", cluster, fo.Status.Clusters, fo.Status.Conditions)
	})
	return fo
}

// controllerReconciles sums a controller's reconciles (any result) in a
// Prometheus text exposition.
func controllerReconciles(metrics, controller string) int {
	n := 0
	prefix := fmt.Sprintf(`controller_runtime_reconcile_total{controller="%s",`, controller)
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
			n += int(v)
		}
	}
	return n
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", Singular: "widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

func widget(ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func jsonValue(raw string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(raw)} }

// propagated reports whether a FederatedObject's Propagated condition is
// True.
func propagated(fo *v1alpha1.FederatedObject) bool {
	return meta.IsStatusConditionTrue(fo.Status.Conditions, v1alpha1.ConditionPropagated)
}
