// Package agentsigner is the controller that approves and signs pull
// agents' certificate requests (signer flotilla.io/agent). A request is
// signed only when it passes agentcert.Check (the subject, usages and key
// an agent asks for, sent by the cluster's bootstrap identity or by its
// agent renewing) and its syncMode Pull MemberCluster is accepted
// (spec.accepted, which only hub admins may set). Malformed requests and
// requests for unknown clusters are denied with the reason; requests of
// members not accepted yet wait, and are deleted after an hour (the agent
// sends a new one). Finished requests are deleted an hour after they were
// created, so that rotation does not pile them up.
//
// The signing CA must be one the host apiserver trusts for client
// certificates (in its --client-ca-file bundle); the controller runs only
// when the controller-manager is given one (--agent-signing-cert-file,
// --agent-signing-key-file).
package agentsigner

// Permissions the controller needs in the host (config/rbac is generated
// from these).
//
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/status,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=flotilla.io/agent,verbs=approve;sign
// +kubebuilder:rbac:groups=flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
