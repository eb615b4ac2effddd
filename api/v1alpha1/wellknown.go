package v1alpha1

// Condition types of a MemberCluster.
const (
	// ConditionReady is True when the member answers, reports itself ready
	// and accepts the control plane's credentials.
	ConditionReady = "Ready"
	// ConditionOffline is True when the member's apiserver cannot be
	// contacted at all.
	ConditionOffline = "Offline"
)

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
	// LabelManaged marks objects Flotilla created and manages.
	LabelManaged = "flotilla.io/managed"
	// LabelMemberCluster names the MemberCluster an object belongs to.
	LabelMemberCluster = "flotilla.io/member-cluster"
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
	// AnnotationConflictResolution narrows the policy's
	// conflictResolution for one object: "abort" turns adoption off;
	// "adopt" takes over existing member objects of the same name in place
	// where the object's namespace may ask for it (see
	// PropagationSpec.ConflictResolution).
	AnnotationConflictResolution = "flotilla.io/conflict-resolution"
	// AnnotationRetainReplicas: "true" leaves spec.replicas of the member
	// copies to member-side actors (a member HPA).
	AnnotationRetainReplicas = "flotilla.io/retain-replicas"
	// AnnotationClusterNames, on a propagated object, narrows its policy's
	// clusters to these (comma-separated names); it can never add a cluster
	// the policy does not allow.
	AnnotationClusterNames = "flotilla.io/cluster-names"
	// AnnotationMaxClusters, on a propagated object, lowers its policy's
	// maxClusters (never raises it).
	AnnotationMaxClusters = "flotilla.io/max-clusters"
	// FinalizerPropagation, on host objects Flotilla propagates, holds
	// their deletion until the member copies are gone.
	FinalizerPropagation = "flotilla.io/propagation"
	// AnnotationRelease, on a FederatedObject being deleted, says what
	// happens to the member copies: ReleaseDelete or ReleaseOrphan.
	// Flotilla sets it before it deletes a FederatedObject.
	AnnotationRelease = "flotilla.io/release"
	// ReleaseDelete deletes the member copies (the host object is deleted).
	ReleaseDelete = "delete"
	// ReleaseOrphan keeps them (the object is no longer propagated, or the
	// host object asked for it with AnnotationOrphan).
	ReleaseOrphan = "orphan"
	// FinalizerCleanup, on FederatedObjects, holds their deletion until the
	// member copies are deleted or orphaned.
	FinalizerCleanup = "flotilla.io/cleanup"
)
