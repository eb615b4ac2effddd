// Package v1alpha1 holds Go types of the same shape as OpenKruise's
// apps.kruise.io/v1alpha1 CloneSet, written for Flotilla's tests: the
// OpenKruise API module cannot be fetched from the module proxy here, so
// `make generate` builds a stand-in CRD (test/workloads/crds) from these
// types with controller-gen. Field names, types and JSON tags follow the
// published API; behaviour is not implemented (a test sets the status).
//
// +kubebuilder:object:generate=false
// +groupName=apps.kruise.io
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CloneSetSpec is the desired state of a CloneSet.
type CloneSetSpec struct {
	// Replicas is the desired number of pods (default 1).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector is a label query over the pods.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod template.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are claims each pod gets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ScaleStrategy says how pods are scaled.
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`
	// UpdateStrategy says how pods are updated.
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// RevisionHistoryLimit is how many revisions are kept.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// MinReadySeconds is how long a pod must be ready to be available.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

// CloneSetScaleStrategy says how pods are scaled.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete first.
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`
	// MaxUnavailable bounds unavailable pods while scaling.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// CloneSetUpdateStrategy says how pods are updated.
type CloneSetUpdateStrategy struct {
	// Type is ReCreate, InPlaceIfPossible or InPlaceOnly.
	// +optional
	Type string `json:"type,omitempty"`
	// Partition is how many (or what share of) pods stay at the old revision.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// MaxUnavailable bounds unavailable pods during an update.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge bounds extra pods during an update.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// Paused stops the update.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// CloneSetStatus is the observed state of a CloneSet.
type CloneSetStatus struct {
	// ObservedGeneration is the generation the controller has seen.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of pods.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready pods.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the number of available pods.
	AvailableReplicas int32 `json:"availableReplicas"`
	// UpdatedReplicas is the number of pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready pods at the update revision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
	// ExpectedUpdatedReplicas is how many pods should be updated.
	// +optional
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`
	// UpdateRevision is the newest revision.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the revision most pods run.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// CollisionCount counts hash collisions of revisions.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// LabelSelector is the selector as a string (for the scale subresource).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// Conditions of the CloneSet.
	// +optional
	Conditions []CloneSetCondition `json:"conditions,omitempty"`
}

// CloneSetCondition is one condition of a CloneSet.
type CloneSetCondition struct {
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

// CloneSet runs identical pods, like a Deployment, with in-place updates.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=clone
// +kubebuilder:printcolumn:name="DESIRED",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="UPDATED",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="UPDATED_READY",type=integer,JSONPath=`.status.updatedReadyReplicas`
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="TOTAL",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type CloneSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloneSetSpec   `json:"spec,omitempty"`
	Status CloneSetStatus `json:"status,omitempty"`
}

// CloneSetList is a list of CloneSets.
//
// +kubebuilder:object:root=true
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}
