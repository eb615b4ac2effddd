package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IntentResource is the member resource of an intended object.
type IntentResource struct {
	// Group is the API group ("" for the core group).
	// +optional
	Group string `json:"group,omitempty"`
	// Version is the API version.
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// Resource is the plural resource name.
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
}

// ClusterIntentSpec is what the federation wants one object in one pull
// member to hold. The hub writes it; the member's agent applies it.
type ClusterIntentSpec struct {
	// Resource is the object's resource in the member.
	Resource IntentResource `json:"resource"`
	// Object is the prepared object (rendered for the cluster, overrides
	// applied, labelled managed, carrying the template-hash label).
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	Object runtime.RawExtension `json:"object"`
	// Hash is the object's template-hash label: a change of it is a change
	// of the intent.
	// +kubebuilder:validation:MinLength=1
	Hash string `json:"hash"`
	// Adopt lets the agent take over an existing unmanaged object of the
	// same name instead of reporting Conflict.
	// +optional
	Adopt bool `json:"adopt,omitempty"`
	// KeepLive lists fields (dotted paths such as spec.replicas) whose
	// member value is kept: a member-side actor owns them.
	// +listType=atomic
	// +optional
	KeepLive []string `json:"keepLive,omitempty"`
	// Suspended tells the agent to leave the member's copy as it is: the
	// host object's federation is suspended (flotilla.io/suspend), so
	// member-side edits are kept and the object is not applied. The agent
	// still reports the copy.
	// +optional
	Suspended bool `json:"suspended,omitempty"`
	// Autoscale is set by the autoscale controller, not by propagation,
	// when a federated HorizontalPodAutoscaler scales the object: the
	// agent reports the usage of the object's pods and the member's own
	// HPAs of it, and deletes the ones the federated HPA took over.
	// Rewriting the rest of the intent keeps it.
	// +optional
	Autoscale *IntentAutoscale `json:"autoscale,omitempty"`
}

// IntentAutoscale asks the agent to report a workload's usage for a
// federated HPA.
type IntentAutoscale struct {
	// Remove names member HPAs of the object that the federated HPA took
	// over: the agent deletes them (only while they scale this object).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// ResourceUsage is the usage of one resource by a workload's pods in the
// member, as a federated HPA counts it.
type ResourceUsage struct {
	// Resource is cpu or memory.
	Resource string `json:"resource"`
	// Ready counts the Ready pods that report usage.
	Ready int32 `json:"ready"`
	// Unready counts the pods that are not Ready.
	// +optional
	Unready int32 `json:"unready,omitempty"`
	// Missing counts the Ready pods without metrics yet.
	// +optional
	Missing int32 `json:"missing,omitempty"`
	// Used is the Ready pods' summed usage: millicores of cpu, bytes of
	// memory.
	Used int64 `json:"used"`
}

// MemberAutoscaler is an HPA in the member that scales the object.
type MemberAutoscaler struct {
	// Name of the HPA (in the object's namespace).
	Name string `json:"name"`
	// MinReplicas is its minimum (1 when unset).
	MinReplicas int32 `json:"minReplicas"`
	// MaxReplicas is its maximum.
	MaxReplicas int32 `json:"maxReplicas"`
	// Managed: Flotilla propagated it (a policy selects the host HPA of
	// that name).
	// +optional
	Managed bool `json:"managed,omitempty"`
}

// IntentAutoscaleStatus is the agent's report for a federated HPA.
type IntentAutoscaleStatus struct {
	// Time is when the agent read the member.
	Time metav1.Time `json:"time"`
	// Usage is the usage of the object's pods per resource.
	// +listType=map
	// +listMapKey=resource
	// +optional
	Usage []ResourceUsage `json:"usage,omitempty"`
	// Autoscalers are the member's HPAs that scale the object.
	// +listType=map
	// +listMapKey=name
	// +optional
	Autoscalers []MemberAutoscaler `json:"autoscalers,omitempty"`
	// Error says why the usage could not be read (no metrics API, ...).
	// +optional
	Error string `json:"error,omitempty"`
}

// IntentOutcome is what the agent made of an intent.
// +kubebuilder:validation:Enum=Applied;Conflict;Failed;Suspended;DeleteFailed
type IntentOutcome string

// Intent outcomes.
const (
	// IntentApplied: the member's copy holds the intent.
	IntentApplied IntentOutcome = "Applied"
	// IntentConflict: an object Flotilla does not manage has the name and
	// adoption is off; it was not touched.
	IntentConflict IntentOutcome = "Conflict"
	// IntentFailed: the member refused the write (the message says why).
	IntentFailed IntentOutcome = "Failed"
	// IntentSuspended: the intent is suspended; the copy was left as the
	// member holds it.
	IntentSuspended IntentOutcome = "Suspended"
	// IntentDeleteFailed: the intent is being deleted and the member
	// refused to delete the copy (the message says why); the agent tries
	// again.
	IntentDeleteFailed IntentOutcome = "DeleteFailed"
)

// ClusterIntentStatus is what the agent reports of the member's copy.
type ClusterIntentStatus struct {
	// ObservedGeneration is the intent generation the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Outcome is what the agent made of that generation.
	// +optional
	Outcome IntentOutcome `json:"outcome,omitempty"`
	// Message explains a Conflict or Failed outcome.
	// +optional
	Message string `json:"message,omitempty"`
	// Copy is what the control plane reads of the member's copy: its
	// identity, labels, annotations, generation, spec.replicas, the pod
	// selector and the whole status. Absent while the member has no
	// managed copy.
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Copy *runtime.RawExtension `json:"copy,omitempty"`
	// Autoscale is the report spec.autoscale asks for, refreshed every
	// 15 seconds while it is set.
	// +optional
	Autoscale *IntentAutoscaleStatus `json:"autoscale,omitempty"`
}

// ClusterIntent is one object Flotilla wants in one pull-mode member
// cluster. ClusterIntents live in the cluster's own hub namespace
// (flotilla-cluster-<cluster>), the only namespace its agent may read:
// the control plane writes their spec, the agent applies them in the
// member and reports the copy in their status. Users do not create them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ci,categories=flotilla
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.object.kind`
// +kubebuilder:printcolumn:name="Object-Namespace",type=string,JSONPath=`.spec.object.metadata.namespace`
// +kubebuilder:printcolumn:name="Object",type=string,JSONPath=`.spec.object.metadata.name`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.outcome`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterIntent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the member should hold.
	Spec ClusterIntentSpec `json:"spec"`
	// Status is what the agent reports.
	// +optional
	Status ClusterIntentStatus `json:"status,omitempty"`
}

// ClusterIntentList is a list of ClusterIntents.
//
// +kubebuilder:object:root=true
type ClusterIntentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterIntents.
	Items []ClusterIntent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterIntent{}, &ClusterIntentList{})
}
