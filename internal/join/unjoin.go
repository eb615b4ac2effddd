package join

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

// Unjoin removes the member's namespace, ServiceAccount and RBAC (only if
// the member is owned by this control plane) and then the MemberCluster and
// its Secret from the host.
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
// this MemberCluster (labelled with its name or owned by it); a Secret
// shared with other MemberClusters stays.
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
	owned := secret.Labels[v1alpha1.LabelMemberCluster] == mc.Name
	for _, ref := range secret.OwnerReferences {
		owned = owned || ref.UID == mc.UID
	}
	if !owned {
		return nil
	}
	err = secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete credentials Secret %s/%s: %w", namespace, secret.Name, err)
	}
	return nil
}

// releaseMember deletes what join created in the member. Deleting the
// namespace removes the ServiceAccount and, through the member's garbage
// collector, the ClusterRole and binding; they are also deleted directly
// when the credentials still allow it.
func releaseMember(ctx context.Context, hostCS kubernetes.Interface, mc *v1alpha1.MemberCluster, id string, o UnjoinOptions) error {
	cfg := o.Member
	if cfg == nil {
		if mc.Spec.SecretRef == nil {
			return fmt.Errorf("MemberCluster %s has no secretRef: pass the member's --kubeconfig", o.Name)
		}
		secret, err := hostCS.CoreV1().Secrets(o.CredentialsNamespace).Get(ctx, mc.Spec.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read credentials of %s: %w", o.Name, err)
		}
		if cfg, err = member.RESTConfig(mc, secret); err != nil {
			return err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(o.Out, "Member %s has no namespace %s; nothing to clean up there\n", o.Name, v1alpha1.SystemNamespace)
		return nil
	case err != nil:
		return fmt.Errorf("reach member %s: %w", o.Name, err)
	case ns.Annotations[v1alpha1.AnnotationControlPlaneID] != id:
		return fmt.Errorf("member %s is owned by another control plane (%s=%s); leaving it untouched", o.Name, v1alpha1.AnnotationControlPlaneID, ns.Annotations[v1alpha1.AnnotationControlPlaneID])
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
