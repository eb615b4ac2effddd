package v1alpha1

import "strings"

// Condition types of a MemberCluster.
const (
	// ConditionReady is True when the member answers, reports itself ready
	// and accepts the control plane's credentials.
	ConditionReady = "Ready"
	// ConditionOffline is True when the member's apiserver cannot be
	// contacted at all.
	ConditionOffline = "Offline"
	// ConditionInsecureTransport is True while the control plane connects to
	// the member without transport security (a plain http endpoint or
	// tls.insecureSkipVerify), which only a controller-manager started with
	// --allow-insecure-members does; it is absent otherwise.
	ConditionInsecureTransport = "InsecureTransport"
	// ConditionEvictionHeld is True while a member that is not Ready is not
	// tainted NoExecute because a failover brake holds it back (most
	// failure domains disrupted, its own domain partially disrupted, a
	// small federation's longer grace period, the clusters-per-minute
	// limit); its reason says which. It is absent otherwise.
	ConditionEvictionHeld = "EvictionHeld"
	// ConditionAccepted, on a syncMode Pull member only, says whether a hub
	// admin accepted the member (spec.accepted) and, while not, whether
	// its agent has asked to join: reasons ReasonAccepted,
	// ReasonAwaitingAgent, ReasonPendingAcceptance and ReasonCSRDenied.
	ConditionAccepted = "Accepted"
	// ConditionKindsRestricted is True while the member's RBAC lets the
	// control plane write only some of the resources the member serves (a
	// restricted join): the message names them, status.apiResources marks
	// the others readOnly, and objects of those kinds are not placed in the
	// member. It is absent when every served kind is writable.
	ConditionKindsRestricted = "KindsRestricted"
	// ReasonMemberRBAC is the reason of ConditionKindsRestricted.
	ReasonMemberRBAC = "MemberRBAC"
)

// Reasons of the Accepted condition.
const (
	// ReasonAccepted: spec.accepted is true; the agent's certificate
	// requests are signed.
	ReasonAccepted = "Accepted"
	// ReasonAwaitingAgent: not accepted, and no agent has asked for a
	// certificate yet.
	ReasonAwaitingAgent = "AwaitingAgent"
	// ReasonPendingAcceptance: an agent asked for a certificate (the
	// message names the CertificateSigningRequest and who sent it); it is
	// signed once an admin accepts the member.
	ReasonPendingAcceptance = "PendingAcceptance"
	// ReasonCSRDenied: the agent's newest certificate request was denied
	// (by an admin, or by the controller-manager because it was malformed
	// or sent by another identity).
	ReasonCSRDenied = "CSRDenied"
)

// SignerAgent is the signer name of pull agents' client certificates: the
// controller-manager approves and signs CertificateSigningRequests for it
// only for accepted members, with the subject AgentUserPrefix + the
// member's name in the organization AgentGroup.
const SignerAgent = "flotilla.io/agent"

// AgentUserPrefix starts the user name of a pull member's agent on the hub
// (the common name of its client certificate): AgentUserPrefix + NAME.
const AgentUserPrefix = "flotilla:agent:"

// AgentGroup is the organization (group) agents ask for in their
// certificate requests.
const AgentGroup = "flotilla:agents"

// AgentMemberGroupPrefix starts the second organization (group) the hub
// adds to every agent certificate it signs: AgentMemberGroupPrefix + the
// MemberCluster's UID. A renewal made with the certificate of an earlier
// MemberCluster of the same name (removed and joined again) is refused.
const AgentMemberGroupPrefix = "flotilla:member-uid:"

// AgentBootstrapServiceAccount is the ServiceAccount, in a pull member's
// hub namespace, of its bootstrap credential: it may only create
// CertificateSigningRequests and read them back.
const AgentBootstrapServiceAccount = "bootstrap"

// Taints Flotilla puts on MemberClusters. The cluster controller manages
// TaintUnreachable and TaintNotReady (NoSchedule at once, NoExecute after
// the failover grace period); the CLI's cordon, drain and uncordon manage
// TaintUnschedulable and TaintDraining.
const (
	// TaintUnreachable is added while the member cannot be contacted.
	TaintUnreachable = "flotilla.io/unreachable"
	// TaintNotReady is added while the member answers but is not ready (its
	// apiserver is unhealthy or refuses the credentials).
	TaintNotReady = "flotilla.io/not-ready"
	// TaintUnschedulable (NoSchedule) is put by `flotilla cordon` and
	// `flotilla drain`: the member gets no new objects or replicas.
	TaintUnschedulable = "flotilla.io/unschedulable"
	// TaintDraining (NoExecute) is put by `flotilla drain`: objects that do
	// not tolerate it move to other members, gracefully.
	TaintDraining = "flotilla.io/draining"
	// DrainForce is the value of TaintDraining put by `flotilla drain
	// --force`: the member's copies go even when no other cluster can take
	// them (the last copy of a workload included).
	DrainForce = "force"
)

// Labels and annotations.
const (
	// AnnotationControlPlaneID, on the member's flotilla-system namespace,
	// records which control plane (the UID of the host's kube-system
	// namespace) a member is joined to.
	AnnotationControlPlaneID = "flotilla.io/control-plane-id"
	// AnnotationClusterName, next to AnnotationControlPlaneID, records the
	// member's name in that control plane.
	AnnotationClusterName = "flotilla.io/cluster-name"
	// AnnotationCreated: "true" on the member's flotilla-system namespace
	// when Flotilla (join or the cluster controller) created it, so that
	// unjoin deletes the namespace; without it unjoin removes only what
	// Flotilla added to a namespace that was there before.
	AnnotationCreated = "flotilla.io/created"
	// LabelManaged marks objects Flotilla created and manages.
	LabelManaged = "flotilla.io/managed"
	// LabelMemberCluster names the MemberCluster an object belongs to. On a
	// credentials Secret it binds the Secret to that MemberCluster: the
	// cluster controller uses a Secret only for the MemberCluster it is
	// bound to (by this label or by an owner reference).
	LabelMemberCluster = "flotilla.io/member-cluster"
	// LabelCluster names the member cluster an object served by the
	// gateway's member cache comes from (Pods, Events, Nodes, ...): the
	// gateway sets it on every object it serves from a member, so that
	// `kubectl get pods -l flotilla.io/cluster=member-1` selects one member.
	LabelCluster = "flotilla.io/cluster"

	// LabelElastic on a MemberCluster, set to "true", says its node
	// autoscaler can add nodes: replicas that fit in no member's nodes
	// (simulated scheduling, Binpack and WaterLevel) gather there, so that
	// its autoscaler sees the whole demand, instead of waiting as Pending
	// pods spread over every member.
	LabelElastic = "flotilla.io/elastic"

	// LabelNodeBudget on a MemberCluster is the most nodes its node
	// autoscaler may grow it to (a decimal integer). A member with a budget
	// is elastic while status.nodeCount is below it, and no longer once it
	// reaches it, whatever LabelElastic says.
	LabelNodeBudget = "flotilla.io/node-budget"

	// LabelCost on a MemberCluster is its relative cost (a non-negative
	// decimal integer, e.g. per core-hour): two-level placement
	// (placement.groups) prefers the groups whose clusters cost least on
	// average. A cluster without it costs 0.
	LabelCost = "flotilla.io/cost"
)

// SystemNamespace is the namespace Flotilla uses in the host (credentials
// Secrets, leader election) and in members (its ServiceAccount).
const SystemNamespace = "flotilla-system"

// Condition types of a FederatedObject.
const (
	// ConditionScheduled is True when the scheduler placed the object.
	ConditionScheduled = "Scheduled"
	// ConditionPropagated is True when every placed cluster's copy holds
	// the federation's fields.
	ConditionPropagated = "Propagated"
	// ConditionRolledOut, on a FederatedObject whose rollout is federated
	// (status.rollout), is True when every cluster runs the host's pod
	// template and False while some are Waiting, Rolling or Stalled.
	ConditionRolledOut = "RolledOut"
	// ReasonUnschedulable is the reason of Scheduled=False when no cluster
	// fits the object (its current placement, if any, is kept).
	ReasonUnschedulable = "Unschedulable"
)

// Field managers of the FederatedObject status: each controller applies
// the fields it owns (see FederatedObjectStatus) under its own name.
const (
	// FieldManagerSchedule owns the Scheduled condition, scheduledClusters,
	// placement and schedulingBasis.
	FieldManagerSchedule = "flotilla-schedule"
	// FieldManagerPropagate owns observedGeneration, the Propagated
	// condition and clusters.
	FieldManagerPropagate = "flotilla-propagate"
	// FieldManagerMigrate owns capacityLimits.
	FieldManagerMigrate = "flotilla-migrate"
	// FieldManagerRollout owns the RolledOut condition and rollout.
	FieldManagerRollout = "flotilla-rollout"
)

// Labels and annotations users put on host objects.
const (
	// LabelPropagationPolicy on a namespaced object chooses the
	// PropagationPolicy (in its namespace) that propagates it, among the
	// policies that may select it.
	LabelPropagationPolicy = "flotilla.io/propagation-policy"
	// LabelClusterPropagationPolicy on an object chooses the
	// ClusterPropagationPolicy that propagates it, among the policies that
	// may select it.
	LabelClusterPropagationPolicy = "flotilla.io/cluster-propagation-policy"
	// AnnotationOrphan: "true" keeps the member copies when the host object
	// is deleted.
	AnnotationOrphan = "flotilla.io/orphan"
	// AnnotationSuspend: "true" on a propagated host object suspends its
	// federation (an emergency fallback): nothing is written to or deleted
	// from its member copies, so member-side edits are kept, and deleting
	// the host object keeps them too. Removing it (or "false") resumes:
	// the federation's fields are applied again.
	AnnotationSuspend = "flotilla.io/suspend"
	// AnnotationConflictResolution narrows the policy's
	// conflictResolution for one object: "abort" turns adoption off;
	// "adopt" takes over existing member objects of the same name in place
	// where the object's namespace may ask for it (see
	// PropagationSpec.ConflictResolution).
	AnnotationConflictResolution = "flotilla.io/conflict-resolution"
	// AnnotationRetainReplicas: "true" leaves spec.replicas of the member
	// copies to member-side actors (a member HPA).
	AnnotationRetainReplicas = "flotilla.io/retain-replicas"
	// AnnotationScaleDownLimit on a workload or its namespace: at most
	// this percent of the workload's replicas may go in one change (the
	// host's scale-down protection, config/admission); a federated HPA
	// scales down in such steps.
	AnnotationScaleDownLimit = "flotilla.io/scale-down-limit"
	// AnnotationTakenOver, on a federated HorizontalPodAutoscaler, records
	// the member HPAs it took over (deleted): a JSON list of their
	// clusters, names and bounds, so that they can be recreated.
	AnnotationTakenOver = "flotilla.io/taken-over"
	// AnnotationOrdinals, on a StatefulSet divided over clusters, says how
	// its ordinals are numbered: OrdinalsFederation (the default) gives
	// each cluster a disjoint range, so that every pod identity exists once
	// in the federation; OrdinalsPerMember numbers every cluster's pods
	// from the template's own start (each member has its own db-0).
	AnnotationOrdinals = "flotilla.io/ordinals"
	// AnnotationKeepOnMove, on a propagated object: "true" keeps its copy
	// in a cluster that leaves its placement (no longer updated; deleted
	// with the host object), "false" deletes it. PersistentVolumeClaims
	// are kept unless it says "false": a move never deletes data.
	AnnotationKeepOnMove = "flotilla.io/keep-on-move"
	// AnnotationSticky, on a propagated object, overrides its policy's
	// sticky: "true" or "false". StatefulSets are sticky unless it says
	// "false".
	AnnotationSticky = "flotilla.io/sticky"
	// AnnotationRollout, on a Deployment divided over clusters, says how
	// a change of its pod template rolls out: RolloutFederated (the
	// default) holds the host's maxSurge and maxUnavailable across all
	// clusters together; RolloutPerMember lets each cluster roll on its
	// own with the template's strategy.
	AnnotationRollout = "flotilla.io/rollout"
	// AnnotationRolloutApproved, on a host object in a staged rollout,
	// approves the Approval gates up to a stage for one revision:
	// "<revision>/<stage>" (flotilla rollout approve writes it).
	AnnotationRolloutApproved = "flotilla.io/rollout-approved"
	// AnnotationRolloutResumed, on a host object in a staged rollout,
	// lets one revision go on past the halts of the stages up to one and
	// through their Pause gates early: "<revision>/<stage>" (flotilla
	// rollout resume writes it).
	AnnotationRolloutResumed = "flotilla.io/rollout-resumed"
	// AnnotationHeld: "true" on a member copy held by a federated
	// rollout (a paused Deployment waiting for its cluster to be
	// admitted). A held copy that does not exist in the member is created
	// unpaused: a paused new Deployment would start no pods.
	AnnotationHeld = "flotilla.io/held"
	// LabelRevision, on a member copy of a workload with a federated
	// rollout, is the revision (RolloutStatus.Revision) its pod template
	// holds.
	LabelRevision = "flotilla.io/revision"
	// AnnotationClusterNames, on a propagated object, narrows its policy's
	// clusters to these (comma-separated names); it can never add a cluster
	// the policy does not allow.
	AnnotationClusterNames = "flotilla.io/cluster-names"
	// AnnotationMaxClusters, on a propagated object, lowers its policy's
	// maxClusters (never raises it).
	AnnotationMaxClusters = "flotilla.io/max-clusters"
	// AnnotationEmptyPlacement, on a propagated object, overrides its
	// policy's placement.emptyPlacement: "allow" lets the object lose all
	// its clusters (its copies are deleted), "keep" keeps them.
	AnnotationEmptyPlacement = "flotilla.io/empty-placement"
	// AnnotationDeletionProtection: "true" on any host object (a template,
	// a namespace) makes the host apiserver refuse its deletion (the
	// ValidatingAdmissionPolicy flotilla.io-deletion-protection), so that
	// a mistaken delete cannot remove a workload from every cluster.
	AnnotationDeletionProtection = "flotilla.io/deletion-protection"
	// AnnotationTemplateProtected, on a FederatedObject, records that its
	// host object carries AnnotationDeletionProtection "true" (Flotilla
	// sets it). A protected object removed with its kind's CRD, whose
	// cleanup deletes objects without admission, keeps its member copies.
	AnnotationTemplateProtected = "flotilla.io/template-protected"
	// FinalizerPropagation is legacy: earlier versions put it on every
	// host object they propagated, to hold its deletion until the member
	// copies were gone. Flotilla no longer sets it and removes it where it
	// finds it (after the release, on an object being deleted).
	FinalizerPropagation = "flotilla.io/propagation"
	// AnnotationRelease, on a FederatedObject, says what happens to the
	// member copies when it is deleted: ReleaseDelete or ReleaseOrphan.
	// Flotilla sets it before it deletes a FederatedObject, and sets
	// ReleaseOrphan on a live one while its host object carries
	// AnnotationOrphan "true". On a ClusterIntent, ReleaseDelete is the
	// hub's mark, set before it deletes the intent, that the agent deletes
	// the copy; an intent deleted without it keeps its copy.
	AnnotationRelease = "flotilla.io/release"
	// AnnotationKeptForOrphans, on the FederatedObject of a follower (a
	// ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim that
	// workloads reference), lists comma-separated the clusters where a
	// workload referencing it was left running when it stopped being
	// propagated (ReleaseOrphan). The follower keeps its copies there,
	// since those pods may still mount or read them. Flotilla sets it.
	AnnotationKeptForOrphans = "flotilla.io/kept-for-orphans"
	// ReleaseDelete deletes the member copies (the host object is deleted).
	ReleaseDelete = "delete"
	// ReleaseOrphan keeps them (the object is no longer propagated, or the
	// host object asked for it with AnnotationOrphan).
	ReleaseOrphan = "orphan"
	// FinalizerCleanup, on FederatedObjects, holds their deletion until the
	// member copies are deleted or orphaned.
	FinalizerCleanup = "flotilla.io/cleanup"
)

// Pull mode: what the hub keeps for each pull member and its agent.
const (
	// ClusterNamespacePrefix starts the name of a pull member's hub
	// namespace (ClusterNamespacePrefix + the MemberCluster's name), which
	// holds its ClusterIntents and its agent's heartbeat Lease.
	ClusterNamespacePrefix = "flotilla-cluster-"
	// AgentLeaseName is the agent's heartbeat Lease in that namespace.
	AgentLeaseName = "agent"
	// FinalizerAgent, on a ClusterIntent, holds its deletion until the
	// agent has deleted the member's copy.
	FinalizerAgent = "flotilla.io/agent"
	// FieldManagerAgent is the field manager of the agent's writes on the
	// hub (the MemberCluster status it reports).
	FieldManagerAgent = "flotilla-agent"
	// AnnotationAgentHealth, on the agent's Lease, is the member's health
	// as the agent's own probe of its apiserver sees it (Healthy, NotReady
	// or Unreachable); AnnotationAgentHealthReason and
	// AnnotationAgentHealthMessage explain it.
	AnnotationAgentHealth        = "flotilla.io/member-health"
	AnnotationAgentHealthReason  = "flotilla.io/member-health-reason"
	AnnotationAgentHealthMessage = "flotilla.io/member-health-message"
)

// ClusterNamespace is the hub namespace of a pull member's intents.
func ClusterNamespace(cluster string) string { return ClusterNamespacePrefix + cluster }

// Values of AnnotationRollout.
const (
	// RolloutFederated holds the budget across the clusters (the
	// default).
	RolloutFederated = "federated"
	// RolloutPerMember rolls each cluster on its own.
	RolloutPerMember = "per-member"
)

// Values of AnnotationOrdinals.
const (
	// OrdinalsFederation gives each cluster of a divided StatefulSet a
	// disjoint range of ordinals (the default).
	OrdinalsFederation = "federation"
	// OrdinalsPerMember numbers each cluster's pods from the template's
	// own start, as if each member ran its own StatefulSet.
	OrdinalsPerMember = "per-member"
)

// Suspended reports whether a host object with these annotations has its
// federation suspended (AnnotationSuspend "true").
func Suspended(annotations map[string]string) bool {
	return annotations[AnnotationSuspend] == "true"
}

// KeepsCopies reports whether a host object with these annotations keeps
// its member copies when it is deleted: it asks to (AnnotationOrphan
// "true"), or its federation is suspended (AnnotationSuspend "true"),
// which no deletion overrides.
func KeepsCopies(annotations map[string]string) bool {
	return annotations[AnnotationOrphan] == "true" || Suspended(annotations)
}

// DeletionProtected reports whether a host object with these annotations
// is protected from deletion (AnnotationDeletionProtection "true", in any
// case, as the admission policy reads it).
func DeletionProtected(annotations map[string]string) bool {
	return strings.EqualFold(annotations[AnnotationDeletionProtection], "true")
}
