package v1alpha1

// This file holds a policy's placement: which clusters, how replicas are
// spread over them, and the affinity, spread and group rules.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
