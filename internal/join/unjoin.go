package join

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/poll"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// UnjoinOptions describe one unjoin.
type UnjoinOptions struct {
	// Name is the MemberCluster's name.
	Name string
	// Host is a client configuration for the host control plane.
	Host *rest.Config
	// Member is a client configuration for the member; nil uses the
	// credentials stored in the host.
	Member *rest.Config
	// CredentialsNamespace is the host namespace of the credentials Secret
	// (default flotilla-system).
	CredentialsNamespace string
	// Force removes the MemberCluster from the host even when the member
	// cannot be cleaned up (it is unreachable or gone).
	Force bool
	// Out receives progress lines (default: discarded).
	Out io.Writer
}

// Unjoin removes what join created in the member (only if the member is
// owned by this control plane): the namespace flotilla-system if join
// created it, otherwise the claim on it and the ServiceAccount, token and
// RBAC; and then the MemberCluster and, if join created it, its Secret from
// the host.
func Unjoin(ctx context.Context, o UnjoinOptions) error {
	if o.CredentialsNamespace == "" {
		o.CredentialsNamespace = v1alpha1.SystemNamespace
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	hostCS, hostClient, err := clients(o.Host)
	if err != nil {
		return err
	}
	mc := &v1alpha1.MemberCluster{}
	if err := hostClient.Get(ctx, types.NamespacedName{Name: o.Name}, mc); err != nil {
		if meta.IsNoMatchError(err) || isResourceNotFound(err) {
			return fmt.Errorf("the host does not serve flotilla.io/v1alpha1 MemberCluster (%v): nothing is joined to it", err)
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("MemberCluster %s not found: nothing to unjoin", o.Name)
		}
		return fmt.Errorf("read MemberCluster %s: %w", o.Name, err)
	}
	if mc.Spec.SyncMode == v1alpha1.SyncModePull {
		// Nothing of ours is in the member but the agent's copies, which
		// stay; the agent's access and hub namespace are owned by the
		// MemberCluster and go with it.
		if err := hostClient.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete MemberCluster %s: %w", o.Name, err)
		}
		fmt.Fprintf(o.Out, "MemberCluster %s removed from the host; its agent's access and namespace %s go with it. Stop `flotilla agent` in the member.\n", o.Name, v1alpha1.ClusterNamespace(o.Name))
		return nil
	}
	id, err := ControlPlaneID(ctx, hostCS)
	if err != nil {
		return err
	}
	if err := releaseMember(ctx, hostCS, mc, id, o); err != nil {
		if !o.Force {
			return fmt.Errorf("%w (use --force to remove %s from the host anyway)", err, o.Name)
		}
		fmt.Fprintf(o.Out, "warning: %v; removing %s from the host anyway (--force)\n", err, o.Name)
	}
	if err := hostClient.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete MemberCluster %s: %w", o.Name, err)
	}
	if err := deleteCredentials(ctx, hostCS, mc, o.CredentialsNamespace); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "MemberCluster %s removed from the host\n", o.Name)
	return nil
}

// deleteCredentials deletes the MemberCluster's Secret if join made it for
// this MemberCluster (owned by it, or written by join's field manager); a
// Secret made by hand (even if labelled for the MemberCluster) or shared
// stays.
func deleteCredentials(ctx context.Context, cs kubernetes.Interface, mc *v1alpha1.MemberCluster, namespace string) error {
	if mc.Spec.SecretRef == nil {
		return nil
	}
	secrets := cs.CoreV1().Secrets(namespace)
	secret, err := secrets.Get(ctx, mc.Spec.SecretRef.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read credentials Secret %s/%s: %w", namespace, mc.Spec.SecretRef.Name, err)
	}
	if !madeByJoin(secret, mc) {
		return nil
	}
	err = secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete credentials Secret %s/%s: %w", namespace, secret.Name, err)
	}
	return nil
}

// madeByJoin reports whether join wrote the credentials Secret for mc: it is
// owned by mc, or it was applied by join's field manager and names no other
// MemberCluster.
func madeByJoin(secret *corev1.Secret, mc *v1alpha1.MemberCluster) bool {
	for _, ref := range secret.OwnerReferences {
		if ref.Kind == "MemberCluster" {
			return ref.UID == mc.UID
		}
	}
	if l, ok := secret.Labels[v1alpha1.LabelMemberCluster]; ok && l != mc.Name {
		return false
	}
	for _, f := range secret.ManagedFields {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// releaseMember deletes what join created in the member. When join created
// the namespace flotilla-system, deleting it removes the ServiceAccount and
// token and, through the member's garbage collector, the ClusterRole and
// binding (they are also deleted directly when the credentials still allow
// it). A namespace that was there before join stays with everything else in
// it: the claim is removed from it and the ClusterRole deleted last (the
// garbage collector removes the ServiceAccount, token and binding it owns),
// since each of these deletions ends the stored credentials' access.
func releaseMember(ctx context.Context, hostCS kubernetes.Interface, mc *v1alpha1.MemberCluster, id string, o UnjoinOptions) error {
	cfg := o.Member
	if cfg == nil {
		var err error
		if cfg, err = storedConfig(ctx, hostCS, mc, o); err != nil {
			return err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = releaseWith(ctx, cs, id, o)
	if err != nil && o.Member == nil && apierrors.IsForbidden(err) {
		// The stored credentials of a restricted join (--restrict-kinds)
		// may not undo join: they cannot delete namespaces or read
		// ClusterRoles.
		err = fmt.Errorf("%w; the stored credentials of %s may not undo join (a restricted join's cannot): pass the member admin's --kubeconfig", err, o.Name)
	}
	return err
}

// releaseWith is releaseMember with a client of the member.
func releaseWith(ctx context.Context, cs kubernetes.Interface, id string, o UnjoinOptions) error {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(o.Out, "Member %s has no namespace %s; nothing to clean up there\n", o.Name, v1alpha1.SystemNamespace)
		return nil
	case err != nil:
		return fmt.Errorf("reach member %s: %w", o.Name, err)
	case unclaimed(ns):
		// An unjoin that stopped after it removed the claim from a
		// namespace that was there before join (the ClusterRole, whose
		// deletion ends the stored credentials' access, goes last): no
		// control plane holds the member, so this one finishes it.
		return releaseKeepingNamespace(ctx, cs, ns, o)
	case ns.Annotations[v1alpha1.AnnotationControlPlaneID] != id:
		return fmt.Errorf("member %s is owned by another control plane (%s=%s); leaving it untouched", o.Name, v1alpha1.AnnotationControlPlaneID, ns.Annotations[v1alpha1.AnnotationControlPlaneID])
	case ns.Annotations[v1alpha1.AnnotationClusterName] != o.Name:
		return fmt.Errorf("member %s is owned by MemberCluster %q of this control plane (%s on its namespace %s), not by %s; leaving it untouched", o.Name, ns.Annotations[v1alpha1.AnnotationClusterName], v1alpha1.AnnotationClusterName, v1alpha1.SystemNamespace, o.Name)
	case ns.Annotations[v1alpha1.AnnotationCreated] != "true":
		return releaseKeepingNamespace(ctx, cs, ns, o)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, v1alpha1.SystemNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s in member %s: %w", v1alpha1.SystemNamespace, o.Name, err)
	}
	// Best effort: with the namespace's ServiceAccount gone these may be
	// refused, and the garbage collector removes them instead.
	_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, ClusterRoleName, metav1.DeleteOptions{})
	_ = cs.RbacV1().ClusterRoles().Delete(ctx, ClusterRoleName, metav1.DeleteOptions{})
	fmt.Fprintf(o.Out, "Removed namespace %s, ServiceAccount and RBAC from member %s\n", v1alpha1.SystemNamespace, o.Name)
	return nil
}

// storedConfig builds a client configuration for the member from the
// credentials stored in the host, refusing a Secret not bound to mc and an
// insecure endpoint (the MemberCluster may have been edited to send the
// credentials elsewhere).
func storedConfig(ctx context.Context, hostCS kubernetes.Interface, mc *v1alpha1.MemberCluster, o UnjoinOptions) (*rest.Config, error) {
	if mc.Spec.SecretRef == nil {
		return nil, fmt.Errorf("MemberCluster %s has no secretRef: pass the member's --kubeconfig", o.Name)
	}
	if insecure := member.Insecurities(mc); len(insecure) > 0 {
		return nil, fmt.Errorf("not sending the stored credentials of %s over an insecure connection (%s): pass the member's --kubeconfig", o.Name, strings.Join(insecure, "; "))
	}
	secret, err := hostCS.CoreV1().Secrets(o.CredentialsNamespace).Get(ctx, mc.Spec.SecretRef.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read credentials of %s: %w", o.Name, err)
	}
	if err := member.CheckBinding(mc, secret); err != nil {
		return nil, fmt.Errorf("not using the stored credentials: %w; pass the member's --kubeconfig", err)
	}
	return member.RESTConfig(mc, secret)
}

// releaseKeepingNamespace undoes join in a namespace that was there before
// it: makes the ClusterRole the only owner of the ServiceAccount, its
// token and the binding (members joined by earlier versions had them owned
// by the namespace), removes the claim (annotations and label) from the
// namespace, then deletes the ClusterRole, so that the member's garbage
// collector removes the rest. The ClusterRole goes last because its
// deletion ends the access of the stored credentials; each step may be
// run again, so an unjoin stopped anywhere can be finished by running it
// again.
func releaseKeepingNamespace(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace, o UnjoinOptions) error {
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, ClusterRoleName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		role = nil
	case err != nil:
		return fmt.Errorf("read ClusterRole %s in member %s: %w", ClusterRoleName, o.Name, err)
	case role.Labels[v1alpha1.LabelManaged] != "true":
		return fmt.Errorf("ClusterRole %s in member %s is not Flotilla's (no %s=true label); leaving the member untouched", ClusterRoleName, o.Name, v1alpha1.LabelManaged)
	}
	if role == nil {
		if err := removeClaim(ctx, cs, ns); err != nil {
			return fmt.Errorf("remove the claim from namespace %s in member %s: %w", v1alpha1.SystemNamespace, o.Name, err)
		}
		fmt.Fprintf(o.Out, "Removed the claim from namespace %s in member %s (which existed before join and stays); no ClusterRole %s to remove\n", v1alpha1.SystemNamespace, o.Name, ClusterRoleName)
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID,
	}}}})
	if err != nil {
		return err
	}
	for _, p := range []struct {
		what string
		do   func() error
	}{
		{"ServiceAccount " + ServiceAccountName, func() error {
			_, err := cs.CoreV1().ServiceAccounts(v1alpha1.SystemNamespace).Patch(ctx, ServiceAccountName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		}},
		{"Secret " + TokenSecretName, func() error {
			_, err := cs.CoreV1().Secrets(v1alpha1.SystemNamespace).Patch(ctx, TokenSecretName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		}},
		{"ClusterRoleBinding " + ClusterRoleName, func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Patch(ctx, ClusterRoleName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		}},
	} {
		if err := p.do(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("hand %s in member %s to ClusterRole %s for deletion: %w", p.what, o.Name, ClusterRoleName, err)
		}
	}
	// The claim goes after the hand-over and before the ClusterRole: an
	// unjoin stopped in between is resumed (unclaimed).
	if err := removeClaim(ctx, cs, ns); err != nil {
		return fmt.Errorf("remove the claim from namespace %s in member %s: %w", v1alpha1.SystemNamespace, o.Name, err)
	}
	if err := cs.RbacV1().ClusterRoles().Delete(ctx, ClusterRoleName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &role.UID}, PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterRole %s in member %s: %w", ClusterRoleName, o.Name, err)
	}
	fmt.Fprintf(o.Out, "Removed the claim, ServiceAccount, token and RBAC from member %s (the member's garbage collector deletes what the ClusterRole owned); namespace %s existed before join and stays\n", o.Name, v1alpha1.SystemNamespace)
	return nil
}

// unclaimed reports whether the member's namespace carries no claim of
// any control plane and was not made by join.
func unclaimed(ns *corev1.Namespace) bool {
	a := ns.Annotations
	return a[v1alpha1.AnnotationControlPlaneID] == "" && a[v1alpha1.AnnotationClusterName] == "" && a[v1alpha1.AnnotationCreated] != "true"
}

// removeClaim takes the claim (annotations and label) off the member's
// namespace; nothing is written when it has none.
func removeClaim(ctx context.Context, cs kubernetes.Interface, ns *corev1.Namespace) error {
	_, id := ns.Annotations[v1alpha1.AnnotationControlPlaneID]
	_, name := ns.Annotations[v1alpha1.AnnotationClusterName]
	_, label := ns.Labels[v1alpha1.LabelManaged]
	if !id && !name && !label {
		return nil
	}
	ns = ns.DeepCopy()
	for _, k := range []string{v1alpha1.AnnotationControlPlaneID, v1alpha1.AnnotationClusterName} {
		delete(ns.Annotations, k)
	}
	delete(ns.Labels, v1alpha1.LabelManaged)
	_, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// WaitReady waits until the MemberCluster's Ready condition is True and
// returns the last condition seen on timeout.
func WaitReady(ctx context.Context, host *rest.Config, name string, timeout time.Duration) error {
	_, c, err := clients(host)
	if err != nil {
		return err
	}
	return poll.Until(ctx, timeout, func(ctx context.Context) error {
		mc := &v1alpha1.MemberCluster{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
		switch {
		case cond == nil:
			return fmt.Errorf("MemberCluster %s has no Ready condition yet: is `flotilla controller-manager` running?", name)
		case cond.Status != metav1.ConditionTrue:
			return fmt.Errorf("MemberCluster %s is not Ready: %s: %s", name, cond.Reason, cond.Message)
		}
		return nil
	})
}

// clients returns a typed and a controller-runtime client for the host.
func clients(cfg *rest.Config) (kubernetes.Interface, client.Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("client for the host: %w", err)
	}
	scheme, err := hostscheme.New()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("client for the host: %w", err)
	}
	return cs, c, nil
}
