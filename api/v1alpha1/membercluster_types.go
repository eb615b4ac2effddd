package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncMode says how Flotilla reaches a member cluster.
// +kubebuilder:validation:Enum=Push;Pull
type SyncMode string

const (
	// SyncModePush: the control plane holds credentials for the member and
	// talks to its apiserver directly.
	SyncModePush SyncMode = "Push"
	// SyncModePull: an agent inside the member connects out to the control
	// plane; no member credentials leave the member.
	SyncModePull SyncMode = "Pull"
)

// MemberClusterSpec describes how to reach a member cluster and how the
// scheduler may use it. Properties such as region, zone or provider are
// labels on the MemberCluster.
//
// +kubebuilder:validation:XValidation:rule="(has(self.syncMode) && self.syncMode == 'Pull') || has(self.apiEndpoint)",message="apiEndpoint is required for syncMode Push"
// +kubebuilder:validation:XValidation:rule="(has(self.syncMode) && self.syncMode == 'Pull') || has(self.secretRef)",message="secretRef is required for syncMode Push: name the Secret holding the member's credentials"
type MemberClusterSpec struct {
	// APIEndpoint is the URL of the member's kube-apiserver, for example
	// https://10.0.0.1:6443. A plain http URL is refused by the
	// controller-manager unless it runs with --allow-insecure-members.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http'] && url(self).getHostname() != ''",message="apiEndpoint must be an absolute http(s) URL such as https://10.0.0.1:6443"
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret, in the flotilla-system namespace of the
	// host, holding the credentials for the member: key "token" (a bearer
	// token) or keys "tls.crt" and "tls.key" (a client certificate), and
	// optionally "ca.crt" (the CA bundle that signs the member's serving
	// certificate). The Secret must be bound to this MemberCluster: labelled
	// flotilla.io/member-cluster=<this name> or owned by it (flotilla join
	// does both); a Secret bound to another MemberCluster is refused.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// TLS tunes how the member's serving certificate is verified.
	// +optional
	TLS *TLSOptions `json:"tls,omitempty"`

	// Taints keep workloads that do not tolerate them off the member.
	// Flotilla manages the taints with keys flotilla.io/unreachable and
	// flotilla.io/not-ready itself; other taints are the operator's.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0 && size(t.key) <= 316)",message="taint key must be 1 to 316 characters (a qualified name such as example.com/maintenance)"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// SyncMode is how Flotilla reaches the member: Push (the control plane
	// talks to the member's apiserver) or Pull (an agent in the member
	// connects out with `flotilla agent`; see spec.accepted).
	// +kubebuilder:default=Push
	// +optional
	SyncMode SyncMode `json:"syncMode,omitempty"`

	// Accepted lets a syncMode Pull member's agent in: only then does the
	// controller-manager sign the agent's certificate requests (signer
	// flotilla.io/agent) and schedule workloads to the member. Setting
	// false again stops renewals and takes the member out of scheduling;
	// unjoin removes the agent's access at once. Only users allowed to
	// update memberclusters/accept (an RBAC-only subresource; hub admins)
	// may change it: `flotilla accept NAME`. Push members ignore it.
	// +optional
	Accepted bool `json:"accepted,omitempty"`
}

// SecretReference names a Secret in the control plane's credentials
// namespace (flotilla-system unless the controller-manager is configured
// otherwise). Keeping member credentials in one namespace lets the
// controller-manager read Secrets there and nowhere else.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// TLSOptions tune the verification of a member's serving certificate.
type TLSOptions struct {
	// InsecureSkipVerify disables verification of the member's serving
	// certificate. For tests only: the controller-manager refuses such a
	// member unless it runs with --allow-insecure-members.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// ServerName overrides the name the serving certificate is checked
	// against (when the endpoint is an address the certificate does not name).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServerName string `json:"serverName,omitempty"`
}

// ResourceScope says whether a resource is namespaced.
// +kubebuilder:validation:Enum=Namespaced;Cluster
type ResourceScope string

// Resource scopes.
const (
	ScopeNamespaced ResourceScope = "Namespaced"
	ScopeCluster    ResourceScope = "Cluster"
)

// APIResource is a resource a member serves.
type APIResource struct {
	// Group is the API group ("" for the core group).
	Group string `json:"group,omitempty"`
	// Version is the API version.
	Version string `json:"version"`
	// Kind is the kind of the resource's objects.
	Kind string `json:"kind"`
	// Resource is the plural resource name.
	Resource string `json:"resource"`
	// Scope says whether objects are namespaced.
	Scope ResourceScope `json:"scope"`
	// ReadOnly says the control plane's credentials in the member may not
	// write this resource (the member's RBAC does not grant get, list,
	// watch, create, patch and delete on it, as a restricted join does):
	// objects of this kind are not placed in the member, and the condition
	// KindsRestricted says so.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
}

// ResourceSummary sums resources over a member's schedulable nodes.
type ResourceSummary struct {
	// Allocatable is the sum of the schedulable nodes' allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Available is Allocatable minus the requests of non-terminated pods
	// bound to those nodes ("pods" counts pods), never below zero.
	// +optional
	Available corev1.ResourceList `json:"available,omitempty"`
	// Reserved is what the scheduler's ledger holds in the member for
	// replicas it placed there that have no pod bound to a node yet ("pods"
	// counts those replicas): decisions count it as taken until the pods
	// start or the reservation times out. Push members only.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
}

// MemberClusterStatus is what the control plane observes of a member.
type MemberClusterStatus struct {
	// Conditions: Ready (the member answers, is healthy and accepts the
	// credentials), Offline (the member cannot be contacted) and, only while
	// the connection has no transport security, InsecureTransport.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion is the version the member's apiserver reports.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIResources lists the resources the member serves, sorted by group,
	// version and resource; subresources are left out.
	// +listType=atomic
	// +optional
	APIResources []APIResource `json:"apiResources,omitempty"`

	// NodeCount is the number of nodes in the member.
	// +optional
	NodeCount int32 `json:"nodeCount"`

	// SchedulableNodeCount is the number of nodes that are Ready, not
	// cordoned and carry no NoSchedule or NoExecute taint.
	// +optional
	SchedulableNodeCount int32 `json:"schedulableNodeCount"`

	// Resources sums allocatable and available resources over the
	// schedulable nodes.
	// +optional
	Resources ResourceSummary `json:"resources,omitempty"`

	// Scheduling sums up what the taints allow: Schedulable, Tainted (a
	// NoSchedule or NoExecute taint of the operator's), Cordoned (flotilla
	// cordon), Draining (flotilla drain), NotReady (a managed NoSchedule
	// taint) or Evicting (a managed NoExecute taint: cluster failover).
	// +optional
	Scheduling string `json:"scheduling,omitempty"`

	// ObservedGeneration is the generation of the spec the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// MemberCluster is a Kubernetes cluster that Flotilla places workloads on.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec.syncMode) || self.spec.syncMode != 'Pull' || self.metadata.name.matches('^[a-z0-9]([-a-z0-9]{0,44}[a-z0-9])?$')",message="the name of a syncMode Pull member must be a DNS label of at most 46 characters: it names the cluster's hub namespace flotilla-cluster-<name>"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mc;mcs,categories=flotilla
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Scheduling",type=string,JSONPath=`.status.scheduling`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="CPU-Available",type=string,JSONPath=`.status.resources.available.cpu`
// +kubebuilder:printcolumn:name="Memory-Available",type=string,JSONPath=`.status.resources.available.memory`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`,priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.apiEndpoint`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to reach the member.
	Spec MemberClusterSpec `json:"spec"`
	// Status is what the control plane observes.
	// +optional
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
//
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MemberClusters.
	Items []MemberCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemberCluster{}, &MemberClusterList{})
}
