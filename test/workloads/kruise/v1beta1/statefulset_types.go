// Package v1beta1 holds Go types of the same shape as OpenKruise's
// apps.kruise.io/v1beta1 Advanced StatefulSet, written for Flotilla's
// tests (the OpenKruise API module cannot be fetched here); `make
// generate` builds a stand-in CRD from them.
//
// +kubebuilder:object:generate=false
// +groupName=apps.kruise.io
package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// StatefulSetSpec is the desired state of an Advanced StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the desired number of pods (default 1).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector is a label query over the pods.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod template.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are the claims each pod gets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ServiceName is the governing Service.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// PodManagementPolicy is OrderedReady or Parallel.
	// +optional
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// UpdateStrategy says how pods are updated.
	// +optional
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// ReserveOrdinals are ordinals the set skips.
	// +optional
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`
	// RevisionHistoryLimit is how many revisions are kept.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// StatefulSetUpdateStrategy says how pods are updated.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate or OnDelete.
	// +optional
	Type string `json:"type,omitempty"`
	// RollingUpdate tunes RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition keeps ordinals below it at the old revision.
	// +optional
	Partition *int32 `json:"partition,omitempty"`
	// MaxUnavailable bounds unavailable pods during the update.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// PodUpdatePolicy is ReCreate, InPlaceIfPossible or InPlaceOnly.
	// +optional
	PodUpdatePolicy string `json:"podUpdatePolicy,omitempty"`
	// Paused stops the update.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	// ObservedGeneration is the generation the controller has seen.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of pods.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready pods.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the number of available pods.
	AvailableReplicas int32 `json:"availableReplicas"`
	// CurrentReplicas is the number of pods at the current revision.
	CurrentReplicas int32 `json:"currentReplicas"`
	// UpdatedReplicas is the number of pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready pods at the update revision.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// CurrentRevision is the revision of the current pods.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the newest revision.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount counts hash collisions of revisions.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// LabelSelector is the selector as a string (for the scale subresource).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// Conditions of the set.
	// +optional
	Conditions []StatefulSetCondition `json:"conditions,omitempty"`
}

// StatefulSetCondition is one condition of an Advanced StatefulSet.
type StatefulSetCondition struct {
	// Type of the condition.
	Type string `json:"type"`
	// Status: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a machine-readable cause.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable cause.
	// +optional
	Message string `json:"message,omitempty"`
}

// StatefulSet is OpenKruise's Advanced StatefulSet.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=sts;asts
// +kubebuilder:printcolumn:name="DESIRED",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="CURRENT",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="UPDATED",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// StatefulSetList is a list of Advanced StatefulSets.
//
// +kubebuilder:object:root=true
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}
