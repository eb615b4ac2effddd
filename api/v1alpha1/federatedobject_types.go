package v1alpha1

import (
	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateReference identifies the host object a FederatedObject
// propagates.
type TemplateReference struct {
	// APIVersion of the object.
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Namespace of the object; empty for cluster-scoped objects (whose
	// FederatedObjects live in flotilla-system).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// UID of the object, so that a new object of the same name is not taken
	// for the old one.
	UID types.UID `json:"uid"`
}

// PolicyReference names the policy that selected an object.
type PolicyReference struct {
	// Kind is PropagationPolicy or ClusterPropagationPolicy.
	Kind string `json:"kind"`
	// Namespace of a PropagationPolicy.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the policy.
	Name string `json:"name"`
}

// ObjectReference names an object in the FederatedObject's namespace.
type ObjectReference struct {
	// Kind of the object: ConfigMap, Secret, ServiceAccount or
	// PersistentVolumeClaim.
	Kind string `json:"kind"`
	// Name of the object.
	Name string `json:"name"`
}

// ClusterPlacement is one cluster the object goes to.
type ClusterPlacement struct {
	// Cluster is the MemberCluster's name.
	Cluster string `json:"cluster"`
	// Replicas is the cluster's share of a Divide workload; unset means the
	// template's own replicas.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// OrdinalStart is the first ordinal of the cluster's pods for a
	// divided StatefulSet (its copy's spec.ordinals.start): each cluster
	// holds a disjoint range, so that every ordinal exists once in the
	// federation. Unset for other kinds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	OrdinalStart *int32 `json:"ordinalStart,omitempty"`
}

// FederatedObjectSpec says what is propagated, by which policy, and where.
// The object itself is not copied here: the host object is the template.
type FederatedObjectSpec struct {
	// Template is the host object.
	Template TemplateReference `json:"template"`

	// Policy is the propagation policy that selected the template. Unset for
	// a follower, which goes where the workloads that reference it go.
	// +optional
	Policy *PolicyReference `json:"policy,omitempty"`

	// Followers are the ConfigMaps, Secrets, ServiceAccounts and
	// PersistentVolumeClaims the template's pods reference; they follow it
	// to its clusters.
	// +listType=atomic
	// +optional
	Followers []ObjectReference `json:"followers,omitempty"`

	// Placement is where versions before status.scheduledClusters kept the
	// scheduler's decision.
	//
	// Deprecated: the decision is status.scheduledClusters. An object
	// written by an earlier version is read from here until the scheduler
	// has recorded its decision in status (keeping the clusters it is on),
	// and then cleared. Nothing else writes it.
	// +listType=atomic
	// +optional
	Placement []ClusterPlacement `json:"placement,omitempty"`
}

// PropagationReason is the state of one cluster's copy.
type PropagationReason string

// Per-cluster propagation states.
const (
	// PropagationOK: the member's copy holds the federation's fields.
	PropagationOK PropagationReason = "OK"
	// PropagationConflict: the member has an object of the same name that
	// Flotilla does not manage; it was not touched.
	PropagationConflict PropagationReason = "Conflict"
	// PropagationClusterNotReady: the cluster is not Ready; its copy is
	// updated when it is.
	PropagationClusterNotReady PropagationReason = "ClusterNotReady"
	// PropagationApplyFailed: rendering or writing the copy failed.
	PropagationApplyFailed PropagationReason = "ApplyFailed"
	// PropagationDeleting: the copy is being deleted (the cluster left the
	// placement, or the object is being deleted).
	PropagationDeleting PropagationReason = "Deleting"
	// PropagationPending: a write to the cluster is in progress (the member
	// is slow to answer, or its cache of the kind is still listing).
	PropagationPending PropagationReason = "Pending"
	// PropagationEvicting: the cluster left the placement; its copy is
	// kept, not counted, until the replacement replicas are Ready in the
	// other clusters or the graceful eviction period has passed.
	PropagationEvicting PropagationReason = "Evicting"
	// PropagationRetained: the cluster left the placement and its copy
	// stays there, no longer updated: a PersistentVolumeClaim (or an
	// object annotated flotilla.io/keep-on-move: "true") is not deleted by
	// a move. It is deleted with the host object, and updated again if the
	// object comes back to the cluster.
	PropagationRetained PropagationReason = "Retained"
	// PropagationSuspended: the host object's federation is suspended
	// (flotilla.io/suspend): the copy is neither written nor deleted, and
	// member-side edits are kept until it resumes.
	PropagationSuspended PropagationReason = "Suspended"
	// PropagationNamespaceDeleting: the host object's namespace is being
	// deleted: the copy is neither written nor deleted until the host
	// object goes (its deletion decides about the copy then), so that the
	// namespace's policies, deleted first, change nothing in the members.
	PropagationNamespaceDeleting PropagationReason = "NamespaceDeleting"
)

// ClusterPropagationStatus is the state of one cluster's copy.
type ClusterPropagationStatus struct {
	// Cluster is the MemberCluster's name.
	Cluster string `json:"cluster"`
	// Reason is OK, Conflict, ClusterNotReady, ApplyFailed, Deleting,
	// Pending, Evicting or Retained.
	Reason PropagationReason `json:"reason"`
	// Message explains a Reason other than OK.
	// +optional
	Message string `json:"message,omitempty"`
	// TemplateGeneration is the generation of the template the copy was
	// last brought up to.
	// +optional
	TemplateGeneration int64 `json:"templateGeneration,omitempty"`
	// LeftAt is when the cluster left the placement (set while its copy is
	// Evicting or Deleting).
	// +optional
	LeftAt *metav1.Time `json:"leftAt,omitempty"`
}

// CapacityLimit is a member's estimated capacity for one workload, learnt
// from replicas that stayed Unschedulable there. The scheduler places at
// most Replicas there while the limit is active.
type CapacityLimit struct {
	// Cluster is the MemberCluster's name.
	Cluster string `json:"cluster"`
	// Replicas is the most replicas the member is given.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// Unschedulable is how many replicas were Unschedulable when the limit
	// was set; the limit is lifted when the member has room for them again.
	// +kubebuilder:validation:Minimum=0
	Unschedulable int32 `json:"unschedulable"`
	// Since is when the limit was set.
	Since metav1.Time `json:"since"`
	// Count is how many times in a row the limit was set: each time holds
	// it twice as long before it may be lifted (1, 2, 4 ... 60 minutes).
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
	// LiftedAt is when the limit was lifted; a lifted limit is kept for a
	// while only to remember Count.
	// +optional
	LiftedAt *metav1.Time `json:"liftedAt,omitempty"`
	// Message says why.
	// +optional
	Message string `json:"message,omitempty"`
}

// FederatedObjectStatus is the state of the propagation. Each field has
// one writer, which applies it (server-side apply on the status
// subresource) under its own field manager: the schedule controller
// (FieldManagerSchedule) the Scheduled condition, scheduledClusters,
// placement and schedulingBasis; the propagate controller
// (FieldManagerPropagate) observedGeneration, the Propagated condition and
// clusters; the migrate controller (FieldManagerMigrate) capacityLimits;
// the rollout controller (FieldManagerRollout) the RolledOut condition and
// rollout.
type FederatedObjectStatus struct {
	// ObservedGeneration is the generation of the FederatedObject last
	// propagated.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Scheduled and Propagated.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ScheduledClusters is the scheduler's decision: the clusters, in name
	// order, and each one's replicas. It is written together with the
	// Scheduled condition, in one write.
	// +listType=atomic
	// +optional
	ScheduledClusters []ClusterPlacement `json:"scheduledClusters,omitempty"`

	// Placement summarises scheduledClusters as "member-1=3,member-2=3"
	// (names alone for objects without replicas), for kubectl get -o wide.
	// +optional
	Placement string `json:"placement,omitempty"`

	// SchedulingBasis is a digest of what the last placement decision was
	// based on (the policy's placement, the object's replicas and requests,
	// the clusters' names, labels, taints, readiness and served kinds, the
	// profile and its webhooks). The scheduler decides again only when it
	// changes, so a restart or a change of free capacity alone moves
	// nothing.
	// +optional
	SchedulingBasis string `json:"schedulingBasis,omitempty"`

	// CapacityLimits are members' estimated capacities for the workload,
	// learnt from replicas that stayed Unschedulable (application
	// failover), in cluster name order.
	// +listType=map
	// +listMapKey=cluster
	// +optional
	CapacityLimits []CapacityLimit `json:"capacityLimits,omitempty"`

	// Clusters are the copies, in cluster name order: those in the
	// placement and those still being deleted.
	// +listType=atomic
	// +optional
	Clusters []ClusterPropagationStatus `json:"clusters,omitempty"`

	// Rollout is the federated rolling update of a workload divided over
	// clusters: the revision the members are rolled to and each cluster's
	// share of the host object's maxSurge and maxUnavailable, so that the
	// budget holds across all members together (docs/rollouts.md).
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// RolloutStatus is a federated rolling update (see
// FederatedObjectStatus.Rollout).
type RolloutStatus struct {
	// Revision identifies the host pod template the members are rolled
	// to (a hash of it, also the copies' flotilla.io/revision label).
	Revision string `json:"revision"`
	// MaxSurge is the host object's maxSurge, resolved against its total
	// replicas: at most this many pods above the total, in all clusters
	// together.
	// +kubebuilder:validation:Minimum=0
	MaxSurge int32 `json:"maxSurge"`
	// MaxUnavailable is the host object's maxUnavailable, resolved
	// against its total replicas: at most this many unavailable, in all
	// clusters together.
	// +kubebuilder:validation:Minimum=0
	MaxUnavailable int32 `json:"maxUnavailable"`
	// Clusters are the placed clusters' parts, in cluster name order.
	// +listType=map
	// +listMapKey=cluster
	// +optional
	Clusters []ClusterRollout `json:"clusters,omitempty"`
	// Stage is the stage rolling now, or the one whose gate the rollout
	// waits at (staged rollouts: the policy's rollout.stages).
	// +optional
	Stage string `json:"stage,omitempty"`
	// Gate is what the rollout waits for before the next stage: Pause
	// (until PausedUntil) or Approval.
	// +optional
	Gate StageGate `json:"gate,omitempty"`
	// PausedUntil is when a Pause gate opens.
	// +optional
	PausedUntil *metav1.Time `json:"pausedUntil,omitempty"`
	// Halted says why the rollout admits no cluster: a copy of the
	// current stage exceeded its progress deadline, or the stage's
	// availability fell below its minAvailablePercent. It stays until
	// flotilla rollout resume, or a new revision.
	// +optional
	Halted string `json:"halted,omitempty"`
	// Reached is the last stage whose clusters the rollout of this
	// revision has been let into (its gate opened); a stage reached is
	// not gated again.
	// +optional
	Reached string `json:"reached,omitempty"`
}

// RolloutState is where one cluster is in a federated rollout.
// +kubebuilder:validation:Enum=Waiting;Rolling;Done;Stalled
type RolloutState string

// Rollout states of a cluster.
const (
	// RolloutWaiting: the copy holds the new template but is held (a
	// paused Deployment) on its current pods until budget frees up.
	RolloutWaiting RolloutState = "Waiting"
	// RolloutRolling: the copy rolls with its share of the budget.
	RolloutRolling RolloutState = "Rolling"
	// RolloutDone: every replica the copy asks for runs the revision, no
	// old one is left (replicas still starting count against the budget
	// as unavailable).
	RolloutDone RolloutState = "Done"
	// RolloutStalled: the copy was rolling when its cluster stopped being
	// Ready, longer ago than the stall timeout; its share went back to
	// the others.
	RolloutStalled RolloutState = "Stalled"
)

// ClusterRollout is one cluster's part of a federated rollout.
type ClusterRollout struct {
	// Cluster is the MemberCluster's name.
	Cluster string `json:"cluster"`
	// State is where the cluster is.
	State RolloutState `json:"state"`
	// MaxSurge is the cluster's share of the surge while Rolling.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxSurge int32 `json:"maxSurge,omitempty"`
	// MaxUnavailable is the cluster's share of the unavailability while
	// Rolling.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	// Since is when the cluster entered its state.
	Since metav1.Time `json:"since"`
	// Stage is the cluster's stage (staged rollouts).
	// +optional
	Stage string `json:"stage,omitempty"`
	// Readmit: the copy may have been changed by hand (the object was
	// suspended), so it waits until admitted even if it looks rolled out.
	// +optional
	Readmit bool `json:"readmit,omitempty"`
	// Generation is the copy's generation when the cluster was admitted:
	// it is Done only once the member has observed a later one (the
	// admitted template), not because the copy it had looked rolled out.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// FederatedObject is Flotilla's internal record of one propagated host
// object: which policy selected it, where it goes and how each cluster's
// copy fares. Flotilla creates and deletes it; users read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=fo,categories=flotilla
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.template.kind`
// +kubebuilder:printcolumn:name="OBJECT",type=string,JSONPath=`.spec.template.name`
// +kubebuilder:printcolumn:name="SCHEDULED",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="PROPAGATED",type=string,JSONPath=`.status.conditions[?(@.type=="Propagated")].status`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=="Propagated")].reason`
// +kubebuilder:printcolumn:name="ROLLOUT",type=string,JSONPath=`.status.conditions[?(@.type=="RolledOut")].reason`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="PLACEMENT",type=string,JSONPath=`.status.placement`,priority=1
// +kubebuilder:printcolumn:name="SCHEDULING",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].message`,priority=1
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FederatedObjectSpec   `json:"spec"`
	Status FederatedObjectStatus `json:"status,omitempty"`
}

// FederatedObjectList is a list of FederatedObjects.
//
// +kubebuilder:object:root=true
type FederatedObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedObject `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FederatedObject{}, &FederatedObjectList{})
}

// Placement is the scheduler's decision in force: status.scheduledClusters,
// or for an object an earlier version wrote and the scheduler has not
// decided on since, the deprecated spec.placement.
func (fo *FederatedObject) Placement() []ClusterPlacement {
	if len(fo.Status.ScheduledClusters) == 0 && len(fo.Spec.Placement) > 0 {
		return fo.Spec.Placement
	}
	return fo.Status.ScheduledClusters
}
