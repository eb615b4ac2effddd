package webhook

import (
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// PayloadVersion is the only payload version this package speaks; it is the
// value of SchedulerPluginWebhookSpec.PayloadVersion.
const PayloadVersion = "v1alpha1"

// APIVersion is the apiVersion of every request, and of every response that
// states one.
const APIVersion = "scheduler.flotilla.io/" + PayloadVersion

// Request kinds.
const (
	// KindFilterRequest asks which clusters may take the unit.
	KindFilterRequest = "FilterRequest"
	// KindScoreRequest asks for a score per cluster.
	KindScoreRequest = "ScoreRequest"
	// KindSelectRequest asks which of the ranked clusters to choose.
	KindSelectRequest = "SelectRequest"
	// KindReplicasRequest asks for the placement on the chosen clusters.
	KindReplicasRequest = "ReplicasRequest"
)

// Response kinds. A response may leave apiVersion and kind out; when it
// states them they must be APIVersion and the kind answering the request.
const (
	// KindFilterResponse answers a FilterRequest.
	KindFilterResponse = "FilterResponse"
	// KindScoreResponse answers a ScoreRequest.
	KindScoreResponse = "ScoreResponse"
	// KindSelectResponse answers a SelectRequest.
	KindSelectResponse = "SelectResponse"
	// KindReplicasResponse answers a ReplicasRequest.
	KindReplicasResponse = "ReplicasResponse"
)

// MaxScore is the highest score a webhook may give; the lowest is 0.
const MaxScore = 100

// TypeInfo identifies a payload: its apiVersion and kind.
type TypeInfo struct {
	// APIVersion is APIVersion.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind,omitempty"`
}

// Request is the body Flotilla POSTs to an extension point's path. One
// request carries every candidate cluster of the point.
type Request struct {
	TypeInfo
	// Unit is the object being placed.
	Unit Unit `json:"unit"`
	// Clusters are the candidates: every cluster still feasible for
	// FilterRequest and ScoreRequest, the ranked clusters (best first) for
	// SelectRequest, the chosen clusters (best first) for ReplicasRequest.
	Clusters []Cluster `json:"clusters"`
	// Scores are the clusters' total scores (the weighted sum of the score
	// plugins) by cluster name; only in SelectRequest and ReplicasRequest.
	Scores map[string]int64 `json:"scores,omitempty"`
}

// Unit describes the object being placed.
type Unit struct {
	// Key identifies the object (its FederatedObject's namespace/name).
	Key string `json:"key"`
	// Group, Version and Kind are the object's kind.
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Namespace ("" for cluster-scoped objects) and Name of the object.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas is the object's replica count; null when it has none.
	Replicas *int32 `json:"replicas"`
	// Requests is one replica's resource requests; omitted when unknown.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Placement is the placement policy in force for the object.
	Placement *v1alpha1.Placement `json:"placement"`
	// Current is the placement in force (empty when not yet placed).
	Current []v1alpha1.ClusterPlacement `json:"current"`
}

// Cluster is the compact view of a MemberCluster sent to webhooks.
type Cluster struct {
	// Name is the MemberCluster's name.
	Name string `json:"name"`
	// Labels are the MemberCluster's labels (region, zone, provider...).
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are the MemberCluster's taints.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Resources are the allocatable and available resources of the
	// member's schedulable nodes.
	Resources v1alpha1.ResourceSummary `json:"resources"`
	// Ready is true when the member's Ready condition is True.
	Ready bool `json:"ready"`
}

// FilterResponse answers a FilterRequest: one result per requested
// cluster, each exactly once.
type FilterResponse struct {
	TypeInfo
	// Results are the verdicts.
	Results []FilterResult `json:"results"`
}

// FilterResult is the verdict on one cluster.
type FilterResult struct {
	// Cluster is the cluster's name.
	Cluster string `json:"cluster"`
	// Allowed is true when the unit may go to the cluster.
	Allowed bool `json:"allowed"`
	// Reason says why a cluster is not allowed, as a short phrase that
	// groups clusters in the scheduling explanation ("no GPU nodes").
	Reason string `json:"reason,omitempty"`
}

// ScoreResponse answers a ScoreRequest: one score per requested cluster,
// each exactly once.
type ScoreResponse struct {
	TypeInfo
	// Scores are the clusters' scores.
	Scores []ClusterScore `json:"scores"`
}

// ClusterScore is one cluster's score.
type ClusterScore struct {
	// Cluster is the cluster's name.
	Cluster string `json:"cluster"`
	// Score is from 0 to MaxScore, higher is better.
	Score int64 `json:"score"`
}

// SelectResponse answers a SelectRequest with the chosen clusters: a subset
// of the requested ones, in any order (Flotilla keeps the ranking order).
type SelectResponse struct {
	TypeInfo
	// Clusters are the chosen clusters' names.
	Clusters []string `json:"clusters"`
	// Reason says why no cluster was chosen; used only when Clusters is
	// empty, and then the unit is unschedulable for that reason.
	Reason string `json:"reason,omitempty"`
}

// ReplicasResponse answers a ReplicasRequest with the placement: a subset
// of the requested clusters. For a unit whose replicas are divided
// (unit.placement.replicaScheduling.type Divide and unit.replicas set),
// every entry carries replicas ≥ 0 and they sum to unit.replicas; for
// other units the replicas are ignored.
type ReplicasResponse struct {
	TypeInfo
	// Placement is the clusters and their replicas.
	Placement []v1alpha1.ClusterPlacement `json:"placement"`
	// Reason says why there is no placement; used only when Placement is
	// empty, and then the unit is unschedulable for that reason.
	Reason string `json:"reason,omitempty"`
}
