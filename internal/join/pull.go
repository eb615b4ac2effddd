package join

import (
	"context"
	"fmt"
	"io"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/poll"
)

// AgentServiceAccount is the ServiceAccount in a pull member's hub
// namespace that its agent may run as, besides the user rbac.AgentUser.
const AgentServiceAccount = "agent"

// AgentRoleName names the ClusterRole and ClusterRoleBinding that let one
// cluster's agent read its MemberCluster and report its status.
func AgentRoleName(cluster string) string { return rbac.AgentClusterRole + ":" + cluster }

// PullOptions describe the registration of a pull member.
type PullOptions struct {
	// Name is the MemberCluster's name.
	Name string
	// Host is an admin client configuration for the host control plane.
	Host *rest.Config
	// Labels are set on the MemberCluster.
	Labels map[string]string
	// BootstrapDuration, when positive, makes JoinPull return a bootstrap
	// kubeconfig: a token of the bootstrap ServiceAccount, valid that
	// long, that can only ask for the agent's certificate.
	BootstrapDuration time.Duration
	// TokenDuration, when positive, makes JoinPull return a kubeconfig for
	// the agent with a token of AgentServiceAccount valid that long. The
	// admin vouches for its holder: the member is accepted at once.
	TokenDuration time.Duration
	// Accept accepts the member (spec.accepted) as part of the join.
	Accept bool
	// Out receives progress lines (default: discarded).
	Out io.Writer
}

// PullCredentials are the kubeconfigs JoinPull wrote, as asked.
type PullCredentials struct {
	// Bootstrap asks for the agent's certificate (flotilla agent
	// --bootstrap-kubeconfig).
	Bootstrap []byte
	// Agent carries a token with the agent's own access (flotilla agent
	// --hub-kubeconfig).
	Agent []byte
}

// JoinPull registers a pull member: MemberCluster NAME with syncMode Pull
// and, owned by it (the host's garbage collector removes them with it), the
// cluster's hub namespace, the ServiceAccounts AgentServiceAccount and
// v1alpha1.AgentBootstrapServiceAccount there, a RoleBinding of the
// ClusterRole rbac.AgentClusterRole in that namespace only, a ClusterRole
// and binding AgentRoleName(NAME) for get on the MemberCluster, patch
// on its status and create on its tunnel (to the gateway), and a binding of rbac.AgentCertificatesClusterRole (ask
// for a certificate and read the request back). The agent's rights go to
// the user rbac.AgentUser(NAME), the subject of the certificate the hub
// signs once the member is accepted, and to AgentServiceAccount; the
// bootstrap ServiceAccount may only ask. The shared ClusterRoles
// (rbac.AgentFile) are applied first. It is the admin's act that lets an
// agent in: the controller-manager grants nothing. Registering again
// refreshes them and leaves spec.accepted as it is unless Accept or
// TokenDuration is set.
func JoinPull(ctx context.Context, o PullOptions) (PullCredentials, error) {
	var creds PullCredentials
	if o.Out == nil {
		o.Out = io.Discard
	}
	hostCS, c, err := clients(o.Host)
	if err != nil {
		return creds, err
	}
	if _, err := checkHost(ctx, c, Options{Name: o.Name}); err != nil {
		return creds, err
	}
	if err := rbac.Apply(ctx, o.Host, rbac.AgentFile); err != nil {
		return creds, fmt.Errorf("install the agents' ClusterRoles: %w", err)
	}
	if err := checkClusterNamespace(ctx, c, o.Name); err != nil {
		return creds, err
	}
	mc := &v1alpha1.MemberCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MemberCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: o.Labels},
		Spec:       v1alpha1.MemberClusterSpec{SyncMode: v1alpha1.SyncModePull},
	}
	if err := c.Patch(ctx, mc, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return creds, fmt.Errorf("apply MemberCluster %s: %w", o.Name, err)
	}
	for _, obj := range agentAccess(mc) {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return creds, fmt.Errorf("grant the agent of %s its access (%T %s): %w", o.Name, obj, obj.GetName(), err)
		}
	}
	ns := v1alpha1.ClusterNamespace(o.Name)
	fmt.Fprintf(o.Out, "MemberCluster %s (syncMode Pull) registered; its agent may use namespace %s as user %s (its certificate) or ServiceAccount %s/%s\n",
		o.Name, ns, rbac.AgentUser(o.Name), ns, AgentServiceAccount)
	if o.Accept || o.TokenDuration > 0 {
		if err := Accept(ctx, o.Host, o.Name, true); err != nil {
			return creds, err
		}
		fmt.Fprintf(o.Out, "MemberCluster %s accepted\n", o.Name)
	}
	ca, err := caData(o.Host)
	if err != nil {
		return creds, err
	}
	token := func(sa string, d time.Duration) (string, error) {
		tr, err := hostCS.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(d / time.Second))},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", ns, sa, err)
		}
		return tr.Status.Token, nil
	}
	if o.BootstrapDuration > 0 {
		t, err := token(v1alpha1.AgentBootstrapServiceAccount, o.BootstrapDuration)
		if err != nil {
			return creds, err
		}
		if creds.Bootstrap, err = agentKubeconfig(o.Host.Host, ca, t, o.Name); err != nil {
			return creds, err
		}
	}
	if o.TokenDuration > 0 {
		t, err := token(AgentServiceAccount, o.TokenDuration)
		if err != nil {
			return creds, err
		}
		if creds.Agent, err = agentKubeconfig(o.Host.Host, ca, t, o.Name); err != nil {
			return creds, err
		}
	}
	return creds, nil
}

// FieldManagerAccept is the field manager of Accept's writes.
const FieldManagerAccept = "flotilla-accept"

// Accept sets spec.accepted of pull member name (a hub admin's act: the
// host's admission policy refuses it to users without update on
// memberclusters/accept).
func Accept(ctx context.Context, host *rest.Config, name string, accepted bool) error {
	_, c, err := clients(host)
	if err != nil {
		return err
	}
	mc := &v1alpha1.MemberCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return fmt.Errorf("read MemberCluster %s: %w", name, err)
	}
	if mc.Spec.SyncMode != v1alpha1.SyncModePull {
		return fmt.Errorf("MemberCluster %s is a %s member: only syncMode Pull members are accepted", name, mc.Spec.SyncMode)
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"accepted":%t}}`, accepted))
	if err := c.Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManagerAccept)); err != nil {
		return fmt.Errorf("set spec.accepted of MemberCluster %s: %w", name, err)
	}
	return nil
}

// agentKubeconfig is a kubeconfig for an agent: the hub's endpoint and CA
// and the agent's token.
func agentKubeconfig(server string, ca []byte, token, cluster string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["agent"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent", Namespace: v1alpha1.ClusterNamespace(cluster)}
	cfg.CurrentContext = "agent"
	return clientcmd.Write(*cfg)
}

// checkClusterNamespace refuses to join cluster when its hub namespace
// exists but is not owned by its MemberCluster (made by an earlier join of
// it): someone who created it first may hold rights there (to mint the
// agent's or the bootstrap ServiceAccount's tokens). The namespace of an
// earlier MemberCluster of the name (just unjoined) is waited for while
// the garbage collector deletes it, up to namespaceGoneTimeout.
func checkClusterNamespace(ctx context.Context, c client.Client, cluster string) error {
	name := v1alpha1.ClusterNamespace(cluster)
	mc := &v1alpha1.MemberCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read MemberCluster %s: %w", cluster, err)
	}
	var foreign bool
	err := poll.Until(ctx, namespaceGoneTimeout, func(ctx context.Context) error {
		ns := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("read the hub namespace %s: %w", name, err)
		}
		earlier := false
		for _, o := range ns.OwnerReferences {
			if o.Kind != "MemberCluster" || o.Name != cluster {
				continue
			}
			if mc.UID != "" && o.UID == mc.UID {
				return nil // this MemberCluster's: joined again
			}
			earlier = true
		}
		if earlier {
			return fmt.Errorf("the hub namespace %s of an earlier MemberCluster %s is still there (the garbage collector deletes it): join again once it is gone", name, cluster)
		}
		foreign = true // it does not go by itself: stop waiting
		return nil
	})
	switch {
	case err != nil:
		return err
	case foreign:
		return fmt.Errorf("the hub namespace %s exists but is not owned by MemberCluster %s (someone made it, or it was left behind by deleting a MemberCluster with --cascade=orphan): "+
			"whoever may act in it could take the agent's identity; delete it (kubectl delete namespace %s) after checking what it holds, or join under another name", name, cluster, name)
	}
	return nil
}

// namespaceGoneTimeout bounds checkClusterNamespace's wait for an earlier
// MemberCluster's hub namespace to be deleted.
const namespaceGoneTimeout = 2 * time.Minute

// agentAccess are the objects JoinPull applies for mc's agent.
func agentAccess(mc *v1alpha1.MemberCluster) []client.Object {
	ns := v1alpha1.ClusterNamespace(mc.Name)
	owner := []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MemberCluster", Name: mc.Name, UID: mc.UID}}
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: rbac.AgentUser(mc.Name)},
		{Kind: rbacv1.ServiceAccountKind, Name: AgentServiceAccount, Namespace: ns},
	}
	requesters := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: rbac.AgentUser(mc.Name)},
		{Kind: rbacv1.ServiceAccountKind, Name: v1alpha1.AgentBootstrapServiceAccount, Namespace: ns},
	}
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, OwnerReferences: owner, Labels: map[string]string{v1alpha1.LabelMemberCluster: mc.Name}}
	}
	one := []string{mc.Name}
	rbacType := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
	}
	return []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: meta("", ns)},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, AgentServiceAccount)},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, v1alpha1.AgentBootstrapServiceAccount)},
		&rbacv1.RoleBinding{
			TypeMeta: rbacType("RoleBinding"), ObjectMeta: meta(ns, rbac.AgentClusterRole),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.AgentClusterRole}, Subjects: subjects,
		},
		&rbacv1.ClusterRole{
			TypeMeta: rbacType("ClusterRole"), ObjectMeta: meta("", AgentRoleName(mc.Name)),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters"}, ResourceNames: one, Verbs: []string{"get"}},
				// Whether its intents' namespace is being deleted: the
				// member then keeps its copies (internal/agent, leave.go).
				{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"get"}},
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters/status"}, ResourceNames: one, Verbs: []string{"get", "patch"}},
				// Open the member's tunnel to the gateway (flotilla agent
				// --gateway-url).
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"memberclusters/tunnel"}, ResourceNames: one, Verbs: []string{"create"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta: rbacType("ClusterRoleBinding"), ObjectMeta: meta("", AgentRoleName(mc.Name)),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentRoleName(mc.Name)}, Subjects: subjects,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta: rbacType("ClusterRoleBinding"), ObjectMeta: meta("", rbac.AgentCertificatesClusterRole+":"+mc.Name),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.AgentCertificatesClusterRole}, Subjects: requesters,
		},
	}
}
