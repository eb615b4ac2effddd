package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceSelector selects host objects by kind and, optionally, namespace,
// name and labels. Every field that is set must match.
type ResourceSelector struct {
	// APIVersion of the objects, for example apps/v1 or v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// Kind of the objects, for example Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Namespace limits a ClusterPropagationPolicy or ClusterOverridePolicy
	// to one namespace. A namespaced policy only ever selects objects in its
	// own namespace and ignores this field.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name selects one object by name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// LabelSelector selects objects by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ConflictResolution says what to do with a member object of the same name
// that Flotilla does not manage.
// +kubebuilder:validation:Enum=Abort;Adopt
type ConflictResolution string

const (
	// ConflictAbort leaves such an object alone and reports Conflict.
	ConflictAbort ConflictResolution = "Abort"
	// ConflictAdopt takes it over in place (no restart of its pods).
	ConflictAdopt ConflictResolution = "Adopt"
)

// PropagationSpec is what a PropagationPolicy or ClusterPropagationPolicy
// says: which objects to propagate and where.
type PropagationSpec struct {
	// ResourceSelectors select the objects the policy propagates (for a
	// ClusterPropagationPolicy, their namespace fields are its allow-list
	// of namespaces). The label flotilla.io/propagation-policy or
	// flotilla.io/cluster-propagation-policy on an object only chooses the
	// policy it names among the policies that may select the object: a
	// label naming a policy whose selectors do not select the object leaves
	// it unpropagated. A policy without selectors applies by label only: a
	// PropagationPolicy to objects of its namespace, a
	// ClusterPropagationPolicy to cluster-scoped objects. To offer a
	// ClusterPropagationPolicy by label to namespaced objects, select that
	// label with a labelSelector (and a namespace, if wanted).
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// Priority orders policies that select the same object: the highest
	// wins; among equals, a PropagationPolicy beats a
	// ClusterPropagationPolicy, then the first by name.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// Placement says where the objects go.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// ConflictResolution says what to do when a member already has an
	// object of the same name that Flotilla does not manage: Abort (leave it
	// and report Conflict, the default) or Adopt (take it over in place).
	// The annotation flotilla.io/conflict-resolution on an object can only
	// narrow this: "abort" turns adoption off; "adopt" is honoured under a
	// PropagationPolicy of the object's namespace, never under a
	// ClusterPropagationPolicy without Adopt.
	// +kubebuilder:default=Abort
	// +optional
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// DisableFollowers stops the ConfigMaps, Secrets, ServiceAccounts and
	// PersistentVolumeClaims a workload references from following it to
	// its clusters.
	// +optional
	DisableFollowers bool `json:"disableFollowers,omitempty"`

	// Failover tunes how the objects move when a cluster fails, is drained,
	// or cannot run their replicas. Cluster failover itself follows the
	// NoExecute taints Flotilla puts on clusters that stay not Ready; a
	// toleration in placement.tolerations (with tolerationSeconds) keeps
	// the objects there, or there for longer.
	// +optional
	Failover *Failover `json:"failover,omitempty"`

	// Rollout orders the clusters of a federated rolling update into
	// stages (docs/rollouts.md): a Deployment divided over clusters then
	// rolls stage by stage, each within the host object's maxSurge and
	// maxUnavailable, with an optional pause or approval between stages,
	// and halts when a stage's copies stop progressing or lose
	// availability.
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`
}

// RolloutPolicy orders the clusters of a federated rollout into stages.
type RolloutPolicy struct {
	// Stages, in order. A cluster belongs to the first stage that names
	// it or whose labelSelector matches its labels; the placed clusters
	// in no stage form a last stage of their own. A stage naming a
	// cluster that does not exist stops the rollout (RolledOut=False,
	// InvalidStages) rather than rolling in an order nobody meant.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=name
	Stages []RolloutStage `json:"stages"`
}

// StageGate is what a rollout waits for after a stage.
// +kubebuilder:validation:Enum=Continue;Pause;Approval
type StageGate string

// Stage gates.
const (
	// GateContinue starts the next stage as soon as the stage is done.
	GateContinue StageGate = "Continue"
	// GatePause waits pauseSeconds after the stage is done (flotilla
	// rollout resume ends the wait early).
	GatePause StageGate = "Pause"
	// GateApproval waits for flotilla rollout approve (the annotation
	// flotilla.io/rollout-approved on the host object).
	GateApproval StageGate = "Approval"
)

// RolloutOthersStage names the last stage of a staged rollout: the placed
// clusters no stage of the policy takes.
const RolloutOthersStage = "others"

// RolloutStage is one stage of a federated rollout.
// +kubebuilder:validation:XValidation:rule="(has(self.clusterNames) && size(self.clusterNames) > 0) || has(self.labelSelector)",message="a stage needs clusterNames or a labelSelector"
// +kubebuilder:validation:XValidation:rule="has(self.after) && self.after == 'Pause' ? has(self.pauseSeconds) : !has(self.pauseSeconds)",message="pauseSeconds is set exactly when after is Pause"
type RolloutStage struct {
	// Name identifies the stage; approvals name it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// ClusterNames are clusters of the stage.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`
	// LabelSelector selects clusters of the stage by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// After is what happens once every cluster of the stage is done,
	// before the next stage starts: Continue, Pause (pauseSeconds) or
	// Approval.
	// +kubebuilder:default=Continue
	// +optional
	After StageGate `json:"after,omitempty"`
	// PauseSeconds is the wait of After: Pause.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +optional
	PauseSeconds *int32 `json:"pauseSeconds,omitempty"`
	// MinAvailablePercent halts the rollout when the stage's available
	// replicas fall below this share of its replicas while it rolls or
	// waits at its gate. Leave room for the stage's own share of
	// maxUnavailable. A copy that exceeds its progressDeadlineSeconds
	// halts the rollout whatever this says.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinAvailablePercent *int32 `json:"minAvailablePercent,omitempty"`
}

// Failover tunes cluster and application failover for a policy's objects.
type Failover struct {
	// GracefulEvictionSeconds is how long the copy in a cluster the object
	// left (evicted by a NoExecute taint, drained, or moved by the
	// scheduler) is kept while its replacement replicas become Ready in the
	// other clusters. The copy is deleted as soon as they are Ready or,
	// once this time has passed, as soon as at least one of them is Ready.
	// 0 deletes it as soon as a placed cluster holds a copy. A copy is
	// never deleted while no other cluster holds the object (only `flotilla
	// drain --force` does that). Default 600.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	GracefulEvictionSeconds *int32 `json:"gracefulEvictionSeconds,omitempty"`

	// Application moves replicas that a member cannot schedule to members
	// with room (on by default for workloads with replicas split by
	// Divide).
	// +optional
	Application *ApplicationFailover `json:"application,omitempty"`
}

// ApplicationFailover tunes the migration of replicas that stay
// Unschedulable in a member.
type ApplicationFailover struct {
	// Disabled turns the migration off.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// UnschedulableSeconds is how long a replica's pod must stay
	// Unschedulable (PodScheduled=False, reason Unschedulable) in a member
	// before the member's estimated capacity for the workload is lowered
	// to the replicas it does run, and the rest move. Default 60.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	UnschedulableSeconds *int32 `json:"unschedulableSeconds,omitempty"`
}

// Failover defaults.
const (
	// DefaultGracefulEvictionSeconds is Failover.GracefulEvictionSeconds
	// when unset.
	DefaultGracefulEvictionSeconds = 600
	// DefaultUnschedulableSeconds is
	// ApplicationFailover.UnschedulableSeconds when unset.
	DefaultUnschedulableSeconds = 60
)

// PropagationPolicy propagates objects in its namespace to member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories=flotilla
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.placement.replicaScheduling.type`
// +kubebuilder:printcolumn:name="PRIORITY",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PropagationSpec `json:"spec"`
	// Status is reserved for later use.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// PolicyStatus is a policy's observed state.
type PolicyStatus struct {
	// ObservedGeneration is the generation last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PropagationPolicyList is a list of PropagationPolicies.
//
// +kubebuilder:object:root=true
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// ClusterPropagationPolicy propagates objects in any namespace, and
// cluster-scoped objects, to member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cpp,categories=flotilla
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.placement.replicaScheduling.type`
// +kubebuilder:printcolumn:name="PRIORITY",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PropagationSpec `json:"spec"`
	// Status is reserved for later use.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicies.
//
// +kubebuilder:object:root=true
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PropagationPolicy{}, &PropagationPolicyList{}, &ClusterPropagationPolicy{}, &ClusterPropagationPolicyList{})
}
