package gateway

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// tunnelRecheck is how often the gateway re-authorizes an agent that
// holds a tunnel open (and checks its certificate's expiry).
const tunnelRecheck = time.Minute

// tokenTunnelAge is how long a tunnel opened with a bearer token lasts
// before the agent must open it again.
const tokenTunnelAge = time.Hour

// isTunnel reports whether r is for a MemberCluster's tunnel subresource.
func isTunnel(r *http.Request) bool {
	info, ok := request.RequestInfoFrom(r.Context())
	// MemberClusters are cluster-scoped: a namespaced path would be
	// authorized against that namespace's RoleBindings.
	return ok && info.IsResourceRequest && info.APIGroup == v1alpha1.GroupVersion.Group && info.Namespace == "" &&
		info.Resource == memberClustersGVR.Resource && info.Subresource == tunnel.Subresource && info.Name != ""
}

// acceptTunnel makes an authorized tunnel request of a pull member's
// agent (create on memberclusters/tunnel for the member: the filters
// checked it) the member's tunnel.
func (m *members) acceptTunnel(w http.ResponseWriter, r *http.Request) {
	info, _ := request.RequestInfoFrom(r.Context())
	gr := memberClustersGVR.GroupResource()
	fail := func(err error) {
		responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{Version: "v1"}, w, r)
	}
	if info.Verb != "create" {
		fail(statusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, gr, info.Name,
			fmt.Sprintf("a tunnel is opened by the member's agent with POST and Upgrade: %s (flotilla agent --gateway-url)", tunnel.Protocol)))
		return
	}
	if !tunnel.IsUpgrade(r) {
		fail(apierrors.NewBadRequest(fmt.Sprintf("a tunnel request must ask to upgrade the connection to %s", tunnel.Protocol)))
		return
	}
	m.mu.Lock()
	st, known := m.status[info.Name]
	m.mu.Unlock()
	switch {
	case m.base == nil:
		fail(apierrors.NewServiceUnavailable("the gateway is not serving members yet"))
		return
	case !known:
		fail(apierrors.NewNotFound(gr, info.Name))
		return
	case !st.pull:
		fail(apierrors.NewConflict(gr, info.Name, errors.New("it is a push member: the gateway reaches it with its credentials Secret, not through an agent")))
		return
	}
	u, _ := request.UserFrom(r.Context())
	if impersonated(r.Context()) {
		// Whoever may impersonate the agent (an admin, or a namespace
		// editor impersonating the agent's ServiceAccount) would take its
		// place and receive users' streams: only the agent itself may.
		fail(apierrors.NewForbidden(gr, info.Name, fmt.Errorf("the tunnel of member %s may not be opened by impersonation (Impersonate-* headers); only its agent, authenticated as itself, may open it", info.Name)))
		return
	}
	if !isAgentOf(u, info.Name) {
		// RBAC lets admins with wildcard rights through too: the tunnel
		// carries users' logs and exec streams, so only the member's own
		// agent may hold it.
		fail(apierrors.NewForbidden(gr, info.Name, fmt.Errorf("only the agent of member %s (user %s or ServiceAccount %s/%s) may open its tunnel, not %s",
			info.Name, rbac.AgentUser(info.Name), v1alpha1.ClusterNamespace(info.Name), agentServiceAccount, u.GetName())))
		return
	}
	attrs, err := filters.GetAuthorizerAttributes(r.Context())
	if err != nil {
		fail(apierrors.NewInternalError(err))
		return
	}
	expires, what := tunnelExpiry(r, u, m.clientCA, time.Now())
	check := func(ctx context.Context) error {
		if time.Now().After(expires) {
			return fmt.Errorf("%s (%s)", what, expires.UTC().Format(time.RFC3339))
		}
		d, reason, err := m.authz.Authorize(ctx, attrs)
		if d != authorizer.DecisionAllow {
			return fmt.Errorf("the agent may no longer open the tunnel: %s %v", reason, err)
		}
		return nil
	}
	ctx := klog.NewContext(m.base, klog.FromContext(m.base).WithName("tunnels"))
	if err := m.tunnels.Accept(ctx, w, r, info.Name, u.GetName(), tunnelRecheck, check); err != nil {
		klog.FromContext(r.Context()).Error(err, "Opening a tunnel", "cluster", info.Name, "agent", u.GetName())
	}
}

// tunnelExpiry is when the tunnel r opens for u must be opened again, and
// why. A certificate's expiry is known; a bearer token is not kept past
// authentication, so a token's tunnel is re-opened (and the token checked
// again) every tokenTunnelAge. A certificate counts only if it is the one
// that authenticated u: it verifies against the client CA, as the x509
// authenticator checks, and names u. The TLS layer only requests client
// certificates, so a request a token authenticated may carry any other
// certificate, whose expiry says nothing about the token.
func tunnelExpiry(r *http.Request, u user.Info, clientCA dynamiccertificates.CAContentProvider, now time.Time) (time.Time, string) {
	byToken := now.Add(tokenTunnelAge)
	tokenWhat := "the tunnel of an agent with a token is re-opened (its token checked again) every " + tokenTunnelAge.String()
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || clientCA == nil || u == nil {
		return byToken, tokenWhat
	}
	certs := r.TLS.PeerCertificates
	opts, ok := clientCA.VerifyOptions()
	if !ok || certs[0].Subject.CommonName != u.GetName() {
		return byToken, tokenWhat
	}
	opts.CurrentTime = now
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return byToken, tokenWhat
	}
	return certs[0].NotAfter, "the agent's certificate expired"
}

// agentServiceAccount is the ServiceAccount of a pull member's agent in
// its cluster's hub namespace (internal/join).
const agentServiceAccount = "agent"

// isAgentOf reports whether u is the agent of member cluster: the
// subject of its certificate, or its ServiceAccount.
func isAgentOf(u user.Info, cluster string) bool {
	if u == nil {
		return false
	}
	return u.GetName() == rbac.AgentUser(cluster) ||
		u.GetName() == serviceaccount.MakeUsername(v1alpha1.ClusterNamespace(cluster), agentServiceAccount)
}
