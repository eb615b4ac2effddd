package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
)

// AgentServiceAccount is the ServiceAccount in a pull member's hub
// namespace that an agent may run as (a hub admin mints its token with
// `kubectl create token`), besides the user rbac.AgentUser.
const AgentServiceAccount = "agent"

// agentRoleName names the ClusterRole and ClusterRoleBinding that let one
// cluster's agent read its MemberCluster and report its status.
func agentRoleName(cluster string) string { return rbac.AgentClusterRole + ":" + cluster }

// ensureAgentAccess creates a pull member's hub namespace and what its
// agent may do: the ClusterRole rbac.AgentClusterRole bound in that
// namespace only, and get on its MemberCluster and patch on its status
// (that one name). Everything is owned by the MemberCluster, so the
// garbage collector removes it with the cluster.
func (r *Reconciler) ensureAgentAccess(ctx context.Context, mc *v1alpha1.MemberCluster) error {
	ns := v1alpha1.ClusterNamespace(mc.Name)
	owner := []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MemberCluster", Name: mc.Name, UID: mc.UID}}
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: rbac.AgentUser(mc.Name)},
		{Kind: rbacv1.ServiceAccountKind, Name: AgentServiceAccount, Namespace: ns},
	}
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, OwnerReferences: owner, Labels: map[string]string{v1alpha1.LabelMemberCluster: mc.Name}}
	}
	one := []string{mc.Name}
	objs := []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: meta("", ns)},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, AgentServiceAccount)},
		&rbacv1.RoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"}, ObjectMeta: meta(ns, rbac.AgentClusterRole),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.AgentClusterRole}, Subjects: subjects,
		},
		&rbacv1.ClusterRole{
			TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"}, ObjectMeta: meta("", agentRoleName(mc.Name)),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters"}, ResourceNames: one, Verbs: []string{"get"}},
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters/status"}, ResourceNames: one, Verbs: []string{"get", "patch"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"}, ObjectMeta: meta("", agentRoleName(mc.Name)),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentRoleName(mc.Name)}, Subjects: subjects,
		},
	}
	for _, o := range objs {
		if err := r.Client.Patch(ctx, o, client.Apply, client.FieldOwner("flotilla"), client.ForceOwnership); err != nil {
			return fmt.Errorf("grant the agent of pull member %s its access (%T %s): %w", mc.Name, o, o.GetName(), err)
		}
	}
	return nil
}

// revokeAgentAccess runs when a MemberCluster is gone: if it was a pull
// member, its agent loses every access at once (the cluster's role,
// binding and hub namespace are deleted) and the intents are let go
// without waiting for the agent, which can no longer act on them; the
// member keeps its copies, as a push member does when it leaves.
func (r *Reconciler) revokeAgentAccess(ctx context.Context, name string) error {
	ns := v1alpha1.ClusterNamespace(name)
	nsObj := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: ns}, nsObj); err != nil {
		return client.IgnoreNotFound(err) // a push member, or already done
	}
	if nsObj.Labels[v1alpha1.LabelMemberCluster] != name {
		return nil // not ours
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentRoleName(name)}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: agentRoleName(name)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rbac.AgentClusterRole}},
	} {
		if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("revoke the agent of %s (%T %s): %w", name, o, o.GetName(), err)
		}
	}
	list := &v1alpha1.ClusterIntentList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("list the intents of %s: %w", name, err)
	}
	for i := range list.Items {
		ci := &list.Items[i]
		if len(ci.Finalizers) == 0 {
			continue
		}
		patch := client.MergeFrom(ci.DeepCopy())
		ci.Finalizers = nil
		if err := r.Client.Patch(ctx, ci, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release intent %s/%s: %w", ns, ci.Name, err)
		}
	}
	if nsObj.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, nsObj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns, err)
		}
		ctrl.LoggerFrom(ctx).Info("Revoked the agent's access and deleted the cluster's hub namespace", "namespace", ns)
	}
	return nil
}
