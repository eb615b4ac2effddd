package agent_test

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestAgentIdentityIsConfined: the agent's hub identity may read the
// intents and renew the Lease of its own cluster's namespace and report
// its own MemberCluster's status, and is refused (403) everything else:
// other clusters' intents, Secrets, templates, other MemberClusters,
// creating intents, and its own namespace's deletion.
func TestAgentIdentityIsConfined(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	agentClient := newClientFor(t, agentConfig())
	own := v1alpha1.ClusterNamespace(pullName)

	// What it needs works.
	if err := agentClient.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(own)); err != nil {
		t.Errorf("list its own intents: %v", err)
	}
	if err := agentClient.Get(ctx, types.NamespacedName{Namespace: own, Name: v1alpha1.AgentLeaseName}, &coordinationv1.Lease{}); err != nil {
		t.Errorf("read its own heartbeat Lease: %v", err)
	}
	if err := agentClient.Get(ctx, types.NamespacedName{Name: pullName}, &v1alpha1.MemberCluster{}); err != nil {
		t.Errorf("read its own MemberCluster: %v", err)
	}
	if err := agentClient.Get(ctx, types.NamespacedName{Name: own}, &corev1.Namespace{}); err != nil {
		t.Errorf("read its own namespace (is it being deleted?): %v", err)
	}

	other := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pull-other"}}
	if _, err := join.JoinPull(ctx, join.PullOptions{Name: other.Name, Host: env.Host.Config}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), other) })
	otherStatus := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"kubernetesVersion": "v0.0.0-forged"}}}
	otherStatus.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MemberCluster"))
	otherStatus.SetName(other.Name)
	intent := &v1alpha1.ClusterIntent{
		ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "forged"},
		Spec: v1alpha1.ClusterIntentSpec{
			Resource: v1alpha1.IntentResource{Version: "v1", Resource: "configmaps"}, Hash: "x",
		},
	}
	intent.Spec.Object.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"forged","namespace":"default"}}`)
	refused := map[string]error{
		"list another cluster's intents":   agentClient.List(ctx, &v1alpha1.ClusterIntentList{}, client.InNamespace(v1alpha1.ClusterNamespace(other.Name))),
		"list every cluster's intents":     agentClient.List(ctx, &v1alpha1.ClusterIntentList{}),
		"list Secrets in flotilla-system":  agentClient.List(ctx, &corev1.SecretList{}, client.InNamespace(v1alpha1.SystemNamespace)),
		"list Secrets in its namespace":    agentClient.List(ctx, &corev1.SecretList{}, client.InNamespace(own)),
		"list Deployments (templates)":     agentClient.List(ctx, &appsv1.DeploymentList{}),
		"list MemberClusters":              agentClient.List(ctx, &v1alpha1.MemberClusterList{}),
		"read another MemberCluster":       agentClient.Get(ctx, types.NamespacedName{Name: other.Name}, &v1alpha1.MemberCluster{}),
		"report another cluster's status":  agentClient.Status().Patch(ctx, otherStatus, client.Apply, client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership),
		"create an intent":                 agentClient.Create(ctx, intent),
		"delete its namespace":             agentClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: own}}),
		"read another cluster's namespace": agentClient.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNamespace(other.Name)}, &corev1.Namespace{}),
		"list namespaces":                  agentClient.List(ctx, &corev1.NamespaceList{}),
		"list FederatedObjects":            agentClient.List(ctx, &v1alpha1.FederatedObjectList{}),
		"list certificate requests":        agentClient.List(ctx, &certificatesv1.CertificateSigningRequestList{}),
	}
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the agent: got %v, want 403 Forbidden", what, err)
		}
	}

	// An intent with the agent's finalizer, which no agent will remove.
	held := intent.DeepCopy()
	held.Namespace, held.Finalizers = v1alpha1.ClusterNamespace(other.Name), []string{v1alpha1.FinalizerAgent}
	if err := admin.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	// Unjoining a pull member revokes its agent: its roles go with the
	// MemberCluster, and so does its hub namespace, whose intents the
	// cluster controller lets go.
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: other.Name, Host: env.Host.Config}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the removed member's agent role and namespace are gone", func(ctx context.Context) error {
		if err := admin.Get(ctx, types.NamespacedName{Name: join.AgentRoleName(other.Name)}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterRole: %v", err)
		}
		ns := &corev1.Namespace{}
		if err := admin.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNamespace(other.Name)}, ns); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s: %v (phase %s)", v1alpha1.ClusterNamespace(other.Name), err, ns.Status.Phase)
		}
		return nil
	})
}
