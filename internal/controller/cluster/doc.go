// Package cluster is the cluster controller: for each MemberCluster it keeps
// a live session to the member (internal/member), and from what the session
// observes writes the MemberCluster's status (conditions, version, API
// resources, node count, allocatable and available resources) and the taints
// flotilla.io/unreachable and flotilla.io/not-ready. It writes only when
// something changed.
//
// A push member's expiring ServiceAccount token (from `flotilla join`) is
// renewed at 80% of its lifetime with a TokenRequest to the member and
// written back to its Secret; the session takes it in place
// (credentials.go).
//
// It uses a member's credentials only from a Secret bound to the
// MemberCluster, refuses insecure endpoints unless allowed, and lets a
// session be used only once the member's claim (the annotations on its
// flotilla-system namespace) is this MemberCluster's: see member.CheckBinding,
// member.Insecurities and member.Claim.
//
// A syncMode Pull member gets a pull session (internal/pull) instead,
// over the cluster's hub namespace (flotilla-cluster-<name>, created with
// the agent's access by `flotilla join --mode pull`); the agent writes the
// version, served kinds and capacity into the status itself, and the
// controller keeps them while it writes conditions and taints from the
// heartbeat's damped health. A pull member that is not accepted
// (spec.accepted) gets no session and is not Ready; its Accepted condition
// says whether its agent has asked for a certificate (accept.go). When a
// pull member is removed, the
// controller releases its intents' finalizers so that its namespace goes.
package cluster

// Permissions the controller needs in the host (config/rbac is generated
// from these).
//
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=flotilla.io,resources=clusterintents,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=clusterintents,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
