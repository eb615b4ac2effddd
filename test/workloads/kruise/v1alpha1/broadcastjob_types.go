package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BroadcastJobSpec is the desired state of a BroadcastJob: a pod on each
// eligible node, run to completion.
type BroadcastJobSpec struct {
	// Parallelism is how many pods run at once.
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`
	// Template is the pod template.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`
	// CompletionPolicy says when the job is done.
	// +optional
	CompletionPolicy CompletionPolicy `json:"completionPolicy,omitempty"`
	// Paused stops new pods.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// FailurePolicy says what a failed pod does to the job.
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// CompletionPolicy says when a BroadcastJob is done.
type CompletionPolicy struct {
	// Type is Always or Never.
	// +optional
	Type string `json:"type,omitempty"`
	// ActiveDeadlineSeconds bounds the job's run.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// TTLSecondsAfterFinished deletes the job after it finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// FailurePolicy says what a failed pod does to a BroadcastJob.
type FailurePolicy struct {
	// Type is Continue, FailFast or Pause.
	// +optional
	Type string `json:"type,omitempty"`
	// RestartLimit is how often a pod is restarted.
	// +optional
	RestartLimit int32 `json:"restartLimit,omitempty"`
}

// BroadcastJobStatus is the observed state of a BroadcastJob.
type BroadcastJobStatus struct {
	// Conditions: Complete, Failed.
	// +optional
	Conditions []JobCondition `json:"conditions,omitempty"`
	// StartTime is when the job started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Active pods.
	// +optional
	Active int32 `json:"active"`
	// Succeeded pods.
	// +optional
	Succeeded int32 `json:"succeeded"`
	// Failed pods.
	// +optional
	Failed int32 `json:"failed"`
	// Desired pods (one per eligible node).
	// +optional
	Desired int32 `json:"desired"`
	// Phase is running, completed, failed, paused or ... .
	// +optional
	Phase string `json:"phase,omitempty"`
}

// JobCondition is one condition of a BroadcastJob.
type JobCondition struct {
	// Type of the condition: Complete or Failed.
	Type string `json:"type"`
	// Status: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
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

// BroadcastJob runs a pod to completion on every eligible node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bcj
// +kubebuilder:printcolumn:name="DESIRED",type=integer,JSONPath=`.status.desired`
// +kubebuilder:printcolumn:name="ACTIVE",type=integer,JSONPath=`.status.active`
// +kubebuilder:printcolumn:name="SUCCEEDED",type=integer,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="FAILED",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BroadcastJobSpec   `json:"spec,omitempty"`
	Status BroadcastJobStatus `json:"status,omitempty"`
}

// BroadcastJobList is a list of BroadcastJobs.
//
// +kubebuilder:object:root=true
type BroadcastJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BroadcastJob `json:"items"`
}
