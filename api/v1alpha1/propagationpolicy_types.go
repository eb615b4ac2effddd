package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
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

// ReplicaSchedulingType says how replicas are placed on the chosen clusters.
// +kubebuilder:validation:Enum=Duplicate;Divide
type ReplicaSchedulingType string

const (
	// ReplicaSchedulingDuplicate gives every chosen cluster the full object,
	// replicas included.
	ReplicaSchedulingDuplicate ReplicaSchedulingType = "Duplicate"
	// ReplicaSchedulingDivide splits the object's replicas across the chosen
	// clusters by weight.
	ReplicaSchedulingDivide ReplicaSchedulingType = "Divide"
)

// ClusterWeight is one cluster's share of the replicas in Divide mode.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ClusterWeight struct {
	// Cluster is the MemberCluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`

	// Weight is the cluster's share relative to the others' weights.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Weight int32 `json:"weight"`

	// MinReplicas is the fewest replicas the cluster gets (while the total
	// allows).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas the cluster gets.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// WeightMode says where Divide's weights come from.
// +kubebuilder:validation:Enum=Static;WaterLevel;Binpack
type WeightMode string

const (
	// WeightStatic uses the weights listed in the policy (equal when none).
	WeightStatic WeightMode = "Static"
	// WeightWaterLevel weighs clusters by free capacity:
	// R_i = min(A_i/ΣA, cap·T_i/ΣT), normalised, with A the available and T
	// the allocatable amount of the workload's main resource.
	WeightWaterLevel WeightMode = "WaterLevel"
	// WeightBinpack fills clusters one after another in score order, each
	// up to what it can hold.
	WeightBinpack WeightMode = "Binpack"
)

// ReplicaScheduling says how replicas are placed.
// +kubebuilder:validation:XValidation:rule="!has(self.weights) || size(self.weights) == 0 || self.type == 'Divide'",message="weights apply only to type Divide"
type ReplicaScheduling struct {
	// Type is Duplicate (every cluster gets all replicas) or Divide (the
	// replicas are split by weight).
	// +kubebuilder:default=Duplicate
	// +optional
	Type ReplicaSchedulingType `json:"type,omitempty"`

	// Weights are static per-cluster weights and limits for Divide. When
	// empty, every chosen cluster has weight 1; otherwise a chosen cluster
	// without an entry has weight 0.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=cluster
	// +optional
	Weights []ClusterWeight `json:"weights,omitempty"`

	// WeightMode is Static (the listed weights, the default), WaterLevel
	// (weights from each cluster's free capacity) or Binpack (fill the
	// best-scored clusters first). Per-cluster min/max apply in every mode.
	// +kubebuilder:default=Static
	// +optional
	WeightMode WeightMode `json:"weightMode,omitempty"`

	// WaterLevelCapPercent caps a cluster's WaterLevel weight at this
	// percentage of its share of total capacity (default 140: the 1.4 cap).
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=1000
	// +optional
	WaterLevelCapPercent *int32 `json:"waterLevelCapPercent,omitempty"`

	// AvoidDisruption (default true) moves no running replicas because
	// weights changed: with the same total the current split stays; on a
	// scale-down only clusters above their share shrink; on a scale-up only
	// clusters below it grow.
	// +optional
	AvoidDisruption *bool `json:"avoidDisruption,omitempty"`
}

// Placement says which member clusters receive the selected objects.
type Placement struct {
	// ClusterNames lists the clusters by name. When set together with
	// ClusterSelector, a cluster must satisfy both.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ClusterSelector selects clusters by their labels. With neither
	// ClusterNames nor ClusterSelector, every cluster is a candidate.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// ClusterAffinity narrows (required) and ranks (preferred) clusters by
	// their labels.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// Tolerations let the objects go to (or stay on) clusters with matching
	// taints. NoSchedule keeps new placements off a cluster, NoExecute also
	// removes existing ones (after tolerationSeconds when tolerated for a
	// while), PreferNoSchedule lowers the score.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// MaxClusters is the most clusters chosen (the best scored).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxClusters *int32 `json:"maxClusters,omitempty"`

	// Groups places in two levels: first it chooses groups of clusters
	// (those sharing a value of a label: a data centre, a region, a
	// provider) by cost and room, then clusters inside the chosen groups
	// as usual.
	// +optional
	Groups *GroupPlacement `json:"groups,omitempty"`

	// SpreadConstraints spread the chosen clusters over the values of a
	// cluster label (region, zone, provider...).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=topologyKey
	// +optional
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says how replicas are placed on the clusters.
	// +optional
	ReplicaScheduling ReplicaScheduling `json:"replicaScheduling,omitempty"`

	// SchedulingProfile names the SchedulingProfile whose plugins decide;
	// empty uses the default profile.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SchedulingProfile string `json:"schedulingProfile,omitempty"`

	// Sticky keeps the first placement: once scheduled, the object stays on
	// its clusters (for stateful applications) unless a cluster leaves the
	// federation or the policy's cluster names or selector exclude it.
	// +optional
	Sticky bool `json:"sticky,omitempty"`

	// EmptyPlacement says what happens when an object that is placed on
	// clusters no longer fits any cluster (no cluster passes the filters:
	// a cluster-names typo, relabelled or tainted clusters, a webhook that
	// rejects them all). Keep (the default) leaves the current placement
	// and its copies in force and reports Scheduled=False/Unschedulable
	// with the reasons; Allow lets the placement become empty, which
	// deletes every member copy. The object annotation
	// flotilla.io/empty-placement (keep or allow) chooses for one object.
	// +kubebuilder:validation:Enum=Keep;Allow
	// +optional
	EmptyPlacement EmptyPlacement `json:"emptyPlacement,omitempty"`
}

// EmptyPlacement says whether a placed object may lose all its clusters.
type EmptyPlacement string

const (
	// EmptyPlacementKeep keeps the current placement when no cluster fits.
	EmptyPlacementKeep EmptyPlacement = "Keep"
	// EmptyPlacementAllow lets the placement become empty (every copy is
	// deleted).
	EmptyPlacementAllow EmptyPlacement = "Allow"
)

// ClusterAffinity selects and ranks clusters by label.
type ClusterAffinity struct {
	// RequiredTerms: a cluster must match at least one term (each term's
	// expressions all hold).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	RequiredTerms []ClusterSelectorTerm `json:"requiredTerms,omitempty"`

	// Preferred terms add their weight to the score of the clusters they
	// match.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Preferred []PreferredClusterTerm `json:"preferred,omitempty"`
}

// ClusterSelectorTerm is a conjunction of label requirements.
type ClusterSelectorTerm struct {
	// MatchExpressions all must hold.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	MatchExpressions []ClusterSelectorRequirement `json:"matchExpressions"`
}

// ClusterSelectorOperator relates a label to values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
type ClusterSelectorOperator string

// ClusterSelectorRequirement is one label requirement.
// +kubebuilder:validation:XValidation:rule="self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : has(self.values) && size(self.values) > 0",message="In, NotIn, Gt and Lt need values; Exists and DoesNotExist take none"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || (size(self.values) == 1 && self.values[0].matches('^-?[0-9]+$'))",message="Gt and Lt take one integer value"
type ClusterSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// Operator is In, NotIn, Exists, DoesNotExist, Gt or Lt.
	Operator ClusterSelectorOperator `json:"operator"`
	// Values for In and NotIn; one integer for Gt and Lt.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// PreferredClusterTerm is a weighted preference.
type PreferredClusterTerm struct {
	// Weight, 1 to 100, added to the score of matching clusters.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
	// Term is the requirement.
	Term ClusterSelectorTerm `json:"term"`
}

// SpreadConstraint bounds how many distinct values of a cluster label the
// chosen clusters cover.
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || !has(self.minGroups) || self.minGroups <= self.maxGroups",message="minGroups must not exceed maxGroups"
type SpreadConstraint struct {
	// TopologyKey is a cluster label, such as topology.kubernetes.io/region.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	TopologyKey string `json:"topologyKey"`
	// MinGroups is the fewest distinct values to cover (scheduling fails
	// with fewer).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinGroups *int32 `json:"minGroups,omitempty"`
	// MaxGroups is the most distinct values to cover.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxGroups *int32 `json:"maxGroups,omitempty"`
}

// GroupPlacement is the first level of a two-level placement. Groups that
// run the object keep it; further groups are added, cheapest first
// (flotilla.io/cost), among those with room for a replica or able to grow
// (flotilla.io/elastic, flotilla.io/node-budget), until their room holds
// the replicas.
type GroupPlacement struct {
	// TopologyKey is the MemberCluster label whose value is a cluster's
	// group; clusters without it are left out.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	TopologyKey string `json:"topologyKey"`
	// MaxGroups is the most groups chosen. Default: as many as the
	// replicas need (one for an object without replicas or not divided).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxGroups *int32 `json:"maxGroups,omitempty"`
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
