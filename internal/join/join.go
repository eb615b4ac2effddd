package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// Names of the objects join creates in a member.
const (
	// ServiceAccountName is the control plane's identity in the member.
	ServiceAccountName = "flotilla-controller"
	// TokenSecretName held the ServiceAccount's long-lived token in earlier
	// versions; join deletes it (the control plane's token now expires and
	// is renewed).
	TokenSecretName = "flotilla-controller-token"
	// ClusterRoleName grants the control plane what it needs in the member:
	// reading nodes, pods and discovery, and creating and updating any kind
	// of object it propagates.
	ClusterRoleName = "flotilla:controller"
	// FieldManager is the server-side apply field manager of join.
	FieldManager = "flotilla-join"
)

// Options describe one join.
type Options struct {
	// Name is the MemberCluster's name.
	Name string
	// Host is a client configuration for the host control plane.
	Host *rest.Config
	// Member is an admin client configuration for the member.
	Member *rest.Config
	// APIEndpoint is the member's apiserver URL as the control plane
	// reaches it (default: Member.Host).
	APIEndpoint string
	// Labels are set on the MemberCluster (region, zone, provider...).
	Labels map[string]string
	// CredentialsNamespace is the host namespace of the credentials Secret
	// (default flotilla-system).
	CredentialsNamespace string
	// TokenDuration is how long the control plane's token for the member
	// is valid (default DefaultTokenDuration); the controller-manager
	// renews it at 80% of its lifetime.
	TokenDuration time.Duration
	// RestrictKinds, when not empty, makes a restricted join: the member
	// ClusterRole lets the control plane write only these resources (plus
	// the reads health, discovery and capacity need) instead of every
	// resource. Join resolves them against the member (ResolveKinds).
	RestrictKinds []schema.GroupResource
	// Timeout bounds each wait (the member's token, a terminating
	// namespace; default 1 minute).
	Timeout time.Duration
	// Out receives progress lines (default: discarded).
	Out io.Writer
}

// ErrOwnedElsewhere is returned when the member is joined to another
// control plane, or to this one under another name.
var ErrOwnedElsewhere = errors.New("member already joined")

// Join registers the member with the host. Joining again with the same name
// refreshes the credentials and changes nothing else.
func Join(ctx context.Context, o Options) error {
	o = o.withDefaults()
	hostCS, hostClient, err := clients(o.Host)
	if err != nil {
		return err
	}
	memberCS, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return fmt.Errorf("client for member %s: %w", o.Name, err)
	}
	id, err := ControlPlaneID(ctx, hostCS)
	if err != nil {
		return err
	}
	existing, err := checkHost(ctx, hostClient, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Joining %s (%s) to control plane %s\n", o.Name, o.APIEndpoint, id)
	if u, err := url.Parse(o.APIEndpoint); err == nil && strings.EqualFold(u.Scheme, "http") {
		fmt.Fprintf(o.Out, "warning: %s is plain http: the controller-manager refuses this member (reason InsecureEndpoint) unless it runs with --allow-insecure-members\n", o.APIEndpoint)
	}
	if len(o.RestrictKinds) > 0 {
		if o.RestrictKinds, err = resolveInMember(memberCS, o); err != nil {
			return err
		}
	}
	_, err = claimMember(ctx, memberCS, id, o)
	if err != nil {
		return err
	}
	token, err := memberToken(ctx, memberCS, o)
	if err != nil {
		return err
	}
	ca, err := caData(o.Member)
	if err != nil {
		return err
	}
	// The Secret comes first so that the controller never sees the
	// MemberCluster without it; it is owned by the MemberCluster (from the
	// start when rejoining), so that deleting the MemberCluster deletes it.
	if err := applyCredentials(ctx, hostCS, existing, token, ca, o); err != nil {
		return err
	}
	mc, err := applyMemberCluster(ctx, hostClient, o)
	if err != nil {
		return err
	}
	if existing == nil {
		if err := applyCredentials(ctx, hostCS, mc, token, ca, o); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "MemberCluster %s created; Secret %s/%s holds its credentials\n", o.Name, o.CredentialsNamespace, o.Name)
	return nil
}

func (o Options) withDefaults() Options {
	if o.APIEndpoint == "" && o.Member != nil {
		o.APIEndpoint = o.Member.Host
	}
	if o.CredentialsNamespace == "" {
		o.CredentialsNamespace = v1alpha1.SystemNamespace
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.TokenDuration <= 0 {
		o.TokenDuration = DefaultTokenDuration
	}
	return o
}

// DefaultTokenDuration is the lifetime of the control plane's token for a
// push member: renewed after 80% of it, so the controller-manager may be
// down for a day and a half without losing the member.
const DefaultTokenDuration = 7 * 24 * time.Hour

// ControlPlaneID identifies a control plane: the UID of the host's
// kube-system namespace, which lives as long as the host's data.
func ControlPlaneID(ctx context.Context, host kubernetes.Interface) (string, error) {
	ns, err := host.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("identify the host control plane (read namespace kube-system): %w", err)
	}
	return string(ns.UID), nil
}

// checkHost refuses to join when the CRDs are missing or the name is taken
// by a MemberCluster for another endpoint, and returns the MemberCluster of
// an earlier join (nil if none).
func checkHost(ctx context.Context, c client.Client, o Options) (*v1alpha1.MemberCluster, error) {
	existing := &v1alpha1.MemberCluster{}
	err := c.Get(ctx, types.NamespacedName{Name: o.Name}, existing)
	switch {
	case meta.IsNoMatchError(err) || isResourceNotFound(err):
		return nil, fmt.Errorf("the host does not serve flotilla.io/v1alpha1 MemberCluster (%v): start `flotilla controller-manager` (it installs the CRDs) or `kubectl apply -f config/crd/bases`", err)
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read MemberCluster %s: %w", o.Name, err)
	case existing.Spec.APIEndpoint != o.APIEndpoint:
		return nil, fmt.Errorf("MemberCluster %s already exists for endpoint %s: choose another name or `flotilla unjoin %s` first", o.Name, existing.Spec.APIEndpoint, o.Name)
	}
	return existing, nil
}

func isResourceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// claimMember records the ownership on the member's flotilla-system
// namespace (creating it, marked as created by Flotilla, when missing),
// refusing a member owned by another control plane or name, and creates the
// ServiceAccount and its RBAC. It returns an owner reference to the
// ClusterRole, which owns the ServiceAccount, its token and the binding, so
// that deleting the ClusterRole lets the member's garbage collector remove
// them all (unjoin of a namespace that was there before join).
func claimMember(ctx context.Context, cs kubernetes.Interface, id string, o Options) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	nsAPI := cs.CoreV1().Namespaces()
	var ns *corev1.Namespace
	err := poll.Until(ctx, o.Timeout, func(ctx context.Context) error {
		got, err := nsAPI.Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			ns = nil
			return nil
		case err != nil:
			return fmt.Errorf("read namespace %s in the member: %w", v1alpha1.SystemNamespace, err)
		case got.DeletionTimestamp != nil:
			return fmt.Errorf("namespace %s in the member is still terminating (from an earlier unjoin)", v1alpha1.SystemNamespace)
		}
		ns = got
		return nil
	})
	if err != nil {
		return nil, err
	}
	claim := member.Claim{ControlPlaneID: id, Cluster: o.Name}
	v := claim.Decide(ns)
	// Create, or update at the resourceVersion read above, so that of two
	// control planes claiming the member at once only one succeeds.
	applied := ns
	switch v.Action {
	case member.ClaimRefused:
		if v.SameControlPlane(claim) {
			return nil, fmt.Errorf("%w: the cluster is joined to this control plane as %q; unjoin %s first", ErrOwnedElsewhere, v.OwnerName, v.OwnerName)
		}
		return nil, fmt.Errorf("%w: the cluster is joined to another Flotilla control plane (%s=%s, as %q); unjoin it there first", ErrOwnedElsewhere, v1alpha1.AnnotationControlPlaneID, v.OwnerID, v.OwnerName)
	case member.ClaimCreate:
		applied, err = nsAPI.Create(ctx, claim.NewNamespace(), metav1.CreateOptions{FieldManager: FieldManager})
	case member.ClaimAdd:
		applied, err = nsAPI.Update(ctx, claim.Mark(ns), metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return nil, fmt.Errorf("claim the member (namespace %s): changed by someone else meanwhile, try again: %w", v1alpha1.SystemNamespace, err)
	}
	if err != nil {
		return nil, fmt.Errorf("claim the member (namespace %s): %w", v1alpha1.SystemNamespace, err)
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	rules := fullRules()
	if len(o.RestrictKinds) > 0 {
		rules = restrictedRules(o.RestrictKinds)
	}
	role := rbacv1ac.ClusterRole(ClusterRoleName).WithLabels(managed()).WithRules(rules...)
	if applied.Annotations[v1alpha1.AnnotationCreated] == "true" {
		// The namespace is Flotilla's: deleting it (unjoin) lets the
		// member's garbage collector remove the ClusterRole and, through
		// it, the binding.
		role.WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Namespace").WithName(applied.Name).WithUID(applied.UID))
	}
	cr, err := cs.RbacV1().ClusterRoles().Apply(ctx, role, opts)
	if err != nil {
		return nil, fmt.Errorf("create ClusterRole %s in the member: %w", ClusterRoleName, err)
	}
	owner := roleOwner(cr.Name, cr.UID)
	if _, err := cs.CoreV1().ServiceAccounts(v1alpha1.SystemNamespace).Apply(ctx,
		corev1ac.ServiceAccount(ServiceAccountName, v1alpha1.SystemNamespace).WithLabels(managed()).WithOwnerReferences(owner), opts); err != nil {
		return nil, fmt.Errorf("create ServiceAccount in the member: %w", err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(ClusterRoleName).WithLabels(managed()).WithOwnerReferences(owner).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(ClusterRoleName)).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(ServiceAccountName).WithNamespace(v1alpha1.SystemNamespace)), opts); err != nil {
		return nil, fmt.Errorf("create ClusterRoleBinding %s in the member: %w", ClusterRoleName, err)
	}
	if err := applyTokenRole(ctx, cs, owner, len(o.RestrictKinds) > 0); err != nil {
		return nil, err
	}
	return owner, nil
}

// roleOwner is an owner reference to the ClusterRole join creates.
func roleOwner(name string, uid types.UID) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion("rbac.authorization.k8s.io/v1").WithKind("ClusterRole").WithName(name).WithUID(uid)
}

// memberToken asks the member for a token of the ServiceAccount
// (TokenRequest) valid for o.TokenDuration (the member may cap it), and
// deletes the long-lived token Secret an earlier version of join made, so
// that no credential that never expires is left. The controller-manager
// renews the token before it expires.
func memberToken(ctx context.Context, cs kubernetes.Interface, o Options) ([]byte, error) {
	tr, err := cs.CoreV1().ServiceAccounts(v1alpha1.SystemNamespace).CreateToken(ctx, ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(o.TokenDuration / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("ask the member for a token of ServiceAccount %s/%s: %w", v1alpha1.SystemNamespace, ServiceAccountName, err)
	}
	err = cs.CoreV1().Secrets(v1alpha1.SystemNamespace).Delete(ctx, TokenSecretName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete the legacy token Secret %s/%s in the member: %w", v1alpha1.SystemNamespace, TokenSecretName, err)
	}
	return []byte(tr.Status.Token), nil
}

// caData returns the CA bundle of a client configuration.
func caData(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	b, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read the member's CA file: %w", err)
	}
	return b, nil
}

// applyMemberCluster creates the MemberCluster, or updates the endpoint,
// Secret reference and labels of an existing one (retrying when the cluster
// controller writes it meanwhile).
func applyMemberCluster(ctx context.Context, c client.Client, o Options) (*v1alpha1.MemberCluster, error) {
	mc := &v1alpha1.MemberCluster{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc = &v1alpha1.MemberCluster{}
		err := c.Get(ctx, types.NamespacedName{Name: o.Name}, mc)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		create := apierrors.IsNotFound(err)
		mc.Name = o.Name
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		maps.Copy(mc.Labels, o.Labels)
		mc.Spec.APIEndpoint = o.APIEndpoint
		mc.Spec.SecretRef = &v1alpha1.SecretReference{Name: o.Name}
		mc.Spec.SyncMode = v1alpha1.SyncModePush
		if create {
			return c.Create(ctx, mc)
		}
		return c.Update(ctx, mc)
	})
	if err != nil {
		return nil, fmt.Errorf("write MemberCluster %s: %w", o.Name, err)
	}
	return mc, nil
}

// applyCredentials writes the credentials Secret, bound to the
// MemberCluster by the label flotilla.io/member-cluster and, unless mc is
// nil, owned by mc (the cluster controller accepts either binding).
func applyCredentials(ctx context.Context, cs kubernetes.Interface, mc *v1alpha1.MemberCluster, token, ca []byte, o Options) error {
	if _, err := cs.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(o.CredentialsNamespace), metav1.ApplyOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("create namespace %s in the host: %w", o.CredentialsNamespace, err)
	}
	data := map[string][]byte{member.KeyToken: token}
	if len(ca) > 0 {
		data[member.KeyCACert] = ca
	}
	secret := corev1ac.Secret(o.Name, o.CredentialsNamespace).
		WithLabels(map[string]string{v1alpha1.LabelMemberCluster: o.Name}).
		WithType(corev1.SecretTypeOpaque).WithData(data)
	if mc != nil {
		secret.WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind("MemberCluster").WithName(mc.Name).WithUID(mc.UID))
	}
	_, err := cs.CoreV1().Secrets(o.CredentialsNamespace).Apply(ctx, secret, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("write credentials Secret %s/%s: %w", o.CredentialsNamespace, o.Name, err)
	}
	return nil
}

func managed() map[string]string { return map[string]string{v1alpha1.LabelManaged: "true"} }
