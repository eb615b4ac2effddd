package rolloutctl_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/crd"
	"github.com/flotilla-io/flotilla/internal/rolloutctl"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{HostOnly: true}, &env))
}

var (
	setupOnce sync.Once
	setupErr  error
	admin     client.Client
)

// setup installs Flotilla's CRDs and the CloneSet stand-in in the host
// once, and returns a client of the host.
func setup(t *testing.T) client.Client {
	t.Helper()
	testenv.Need(t, env)
	setupOnce.Do(func() {
		ctx := context.Background()
		if setupErr = crd.Install(ctx, env.Host.Config); setupErr != nil {
			return
		}
		scheme, err := hostscheme.New()
		if err != nil {
			setupErr = err
			return
		}
		if err := apiextensionsv1.AddToScheme(scheme); err != nil {
			setupErr = err
			return
		}
		if admin, setupErr = client.New(env.Host.Config, client.Options{Scheme: scheme}); setupErr != nil {
			return
		}
		cloneSet, err := crds.CloneSet()
		if err != nil {
			setupErr = err
			return
		}
		setupErr = admin.Create(ctx, cloneSet)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	testenv.Eventually(t, time.Minute, "the CloneSet CRD is established", func(ctx context.Context) error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := admin.Get(ctx, client.ObjectKey{Name: "clonesets.apps.kruise.io"}, got); err != nil {
			return err
		}
		return crds.Established(got)
	})
	return admin
}

// mapper is the host's discovery, with short names, as the CLI builds it.
func mapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
}

func TestResolve(t *testing.T) {
	setup(t)
	m := mapper(t)
	deployment := appsv1.SchemeGroupVersion.WithKind("Deployment")
	statefulSet := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	cloneSet := schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	tests := []struct {
		arg      string
		want     schema.GroupVersionKind
		wantName string
		wantErr  string
	}{
		{arg: "web", want: deployment, wantName: "web"},
		{arg: "deploy/web", want: deployment, wantName: "web"},
		{arg: "deployments.apps/web", want: deployment, wantName: "web"},
		{arg: "Deployment/web", want: deployment, wantName: "web"},
		{arg: "sts/db", want: statefulSet, wantName: "db"},
		{arg: "statefulset.v1.apps/db", want: statefulSet, wantName: "db"},
		{arg: "cloneset/web", want: cloneSet, wantName: "web"},
		{arg: "clonesets.apps.kruise.io/web", want: cloneSet, wantName: "web"},
		{arg: "cm/settings", wantErr: "a ConfigMap has no federated rollout"},
		{arg: "daemonset/agent", wantErr: "a DaemonSet has no federated rollout"},
		{arg: "widgets/x", wantErr: "widgets: the host serves no such kind"},
		{arg: "deploy/", wantErr: "want NAME or KIND/NAME"},
		{arg: "a/b/c", wantErr: "want NAME or KIND/NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := rolloutctl.Resolve(m, tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) = %+v, %v; want an error with %q", tt.arg, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Kind != tt.want || got.Name != tt.wantName || !got.Namespaced {
				t.Errorf("Resolve(%q) = %+v, %v; want %v, %q, namespaced", tt.arg, got, err, tt.want, tt.wantName)
			}
		})
	}
}

// TestApproveResumeAbortBeyondDeployments: approve and resume record the
// decision on a StatefulSet and on a custom kind's object as on a
// Deployment (the annotations the rollout controller reads, for the
// revision and stage the FederatedObject reports); abort refuses them
// with ErrNoHistory and changes nothing; an object that is not propagated
// or has no federated rollout is named in the error.
func TestApproveResumeAbortBeyondDeployments(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "x"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	if err := c.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	cloneSet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"namespace": ns, "name": "web"},
		"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "x"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/app:1"}}}}},
	}}
	if err := c.Create(ctx, cloneSet); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{sts, cloneSet} {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			gvk = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
		}
		t.Run(gvk.Kind, func(t *testing.T) {
			w := rolloutctl.Workload{Client: c, Kind: gvk, Key: types.NamespacedName{Namespace: ns, Name: obj.GetName()}}
			if _, err := w.Approve(ctx, ""); err == nil || !strings.Contains(err.Error(), "is not propagated") {
				t.Errorf("approve before there is a FederatedObject: %v, want \"is not propagated\"", err)
			}
			key := templates.Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: obj.GetName()}.FederatedName()
			fo := &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Spec: v1alpha1.FederatedObjectSpec{Template: v1alpha1.TemplateReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: obj.GetUID()}}}
			if err := c.Create(ctx, fo); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Approve(ctx, ""); err == nil || !strings.Contains(err.Error(), "has no federated rollout") {
				t.Errorf("approve without a rollout in status: %v, want \"has no federated rollout\"", err)
			}
			fo.Status.Rollout = &v1alpha1.RolloutStatus{Revision: "r2", Stage: "canary", Gate: v1alpha1.GateApproval}
			if err := c.Status().Update(ctx, fo); err != nil {
				t.Fatal(err)
			}
			msg, err := w.Approve(ctx, "")
			if err != nil || !strings.Contains(msg, "revision r2 approved after stage canary") {
				t.Fatalf("approve: %q, %v", msg, err)
			}
			if got := annotation(t, c, gvk, w.Key, v1alpha1.AnnotationRolloutApproved); got != "r2/canary" {
				t.Errorf("%s after approve = %q, want r2/canary", v1alpha1.AnnotationRolloutApproved, got)
			}
			if _, err := w.Resume(ctx); err == nil || !strings.Contains(err.Error(), "neither halted nor at a Pause gate") {
				t.Errorf("resume of a rollout waiting for approval: %v", err)
			}
			fo.Status.Rollout = &v1alpha1.RolloutStatus{Revision: "r2", Stage: "rest", Halted: "member-2 exceeded its progress deadline"}
			if err := c.Status().Update(ctx, fo); err != nil {
				t.Fatal(err)
			}
			if msg, err := w.Resume(ctx); err != nil || !strings.Contains(msg, "revision r2 resumed at stage rest") {
				t.Fatalf("resume: %q, %v", msg, err)
			}
			if got := annotation(t, c, gvk, w.Key, v1alpha1.AnnotationRolloutResumed); got != "r2/rest" {
				t.Errorf("%s after resume = %q, want r2/rest", v1alpha1.AnnotationRolloutResumed, got)
			}
			before := generation(t, c, gvk, w.Key)
			if _, err := w.Abort(ctx); !errors.Is(err, rolloutctl.ErrNoHistory) {
				t.Errorf("abort: %v, want ErrNoHistory", err)
			}
			if after := generation(t, c, gvk, w.Key); after != before {
				t.Errorf("abort changed the spec: generation %d -> %d", before, after)
			}
		})
	}
}

func read(t *testing.T, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), key, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func annotation(t *testing.T, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName, name string) string {
	t.Helper()
	return read(t, c, gvk, key).GetAnnotations()[name]
}

func generation(t *testing.T, c client.Client, gvk schema.GroupVersionKind, key types.NamespacedName) int64 {
	t.Helper()
	return read(t, c, gvk, key).GetGeneration()
}

// TestApproveChecksTheStage: approve refuses a stage the rollout does not
// have, and one before a stage already approved for the same revision
// (which would close that gate again), ordering them by the policy; the
// same stage again, or a later one, is approved.
func TestApproveChecksTheStage(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	labels := map[string]string{"app": "x"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}}}}}
	if err := c.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	stage := func(name string) v1alpha1.RolloutStage {
		return v1alpha1.RolloutStage{Name: name, ClusterNames: []string{"member-" + name}, After: v1alpha1.GateApproval}
	}
	policy := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staged"},
		Spec: v1alpha1.PropagationSpec{Rollout: &v1alpha1.RolloutPolicy{Stages: []v1alpha1.RolloutStage{stage("canary"), stage("eu")}}}}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	gvk := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	key := templates.Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: sts.Name}.FederatedName()
	fo := &v1alpha1.FederatedObject{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: v1alpha1.FederatedObjectSpec{
			Template: v1alpha1.TemplateReference{APIVersion: "apps/v1", Kind: gvk.Kind, Name: sts.Name, UID: sts.UID},
			Policy:   &v1alpha1.PolicyReference{Kind: "PropagationPolicy", Namespace: ns, Name: policy.Name}}}
	if err := c.Create(ctx, fo); err != nil {
		t.Fatal(err)
	}
	fo.Status.Rollout = &v1alpha1.RolloutStatus{Revision: "r1", Stage: "canary", Gate: v1alpha1.GateApproval,
		Clusters: []v1alpha1.ClusterRollout{
			{Cluster: "member-canary", State: v1alpha1.RolloutDone, Stage: "canary", Since: metav1.Now()},
			{Cluster: "member-eu", State: v1alpha1.RolloutWaiting, Stage: "eu", Since: metav1.Now()},
			{Cluster: "member-us", State: v1alpha1.RolloutWaiting, Stage: "others", Since: metav1.Now()},
		}}
	if err := c.Status().Update(ctx, fo); err != nil {
		t.Fatal(err)
	}
	w := rolloutctl.Workload{Client: c, Kind: gvk, Key: types.NamespacedName{Namespace: ns, Name: sts.Name}}
	approved := func() string { return annotation(t, c, gvk, w.Key, v1alpha1.AnnotationRolloutApproved) }

	if _, err := w.Approve(ctx, "canry"); err == nil || !strings.Contains(err.Error(), `no stage "canry" (its stages: canary, eu, others)`) {
		t.Errorf("approve a misspelt stage: %v", err)
	}
	if got := approved(); got != "" {
		t.Errorf("a refused approval wrote %q", got)
	}
	if msg, err := w.Approve(ctx, "eu"); err != nil || !strings.Contains(msg, "revision r1 approved after stage eu") {
		t.Fatalf("approve eu ahead: %q, %v", msg, err)
	}
	if _, err := w.Approve(ctx, "canary"); err == nil || !strings.Contains(err.Error(), "already approved through stage eu") {
		t.Errorf("approve canary after eu: %v, want a refusal", err)
	}
	if got := approved(); got != "r1/eu" {
		t.Errorf("after the refusal: %q, want r1/eu", got)
	}
	if msg, err := w.Approve(ctx, "eu"); err != nil || strings.Contains(msg, "replacing") {
		t.Errorf("approve eu again: %q, %v", msg, err)
	}
	if msg, err := w.Approve(ctx, "others"); err != nil || !strings.Contains(msg, "replacing the approval after stage eu") {
		t.Errorf("approve the last stage: %q, %v", msg, err)
	}
	if got := approved(); got != "r1/others" {
		t.Errorf("after approving the last stage: %q, want r1/others", got)
	}
	// Without a cluster outside the policy's stages there is no "others"
	// stage: approving it would approve nothing and take eu's back.
	fo.Status.Rollout.Clusters = fo.Status.Rollout.Clusters[:2]
	if err := c.Status().Update(ctx, fo); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Approve(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Approve(ctx, "others"); err == nil || !strings.Contains(err.Error(), `no stage "others" (its stages: canary, eu)`) {
		t.Errorf("approve a stage no cluster is in: %v", err)
	}
}
