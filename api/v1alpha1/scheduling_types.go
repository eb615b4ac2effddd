package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PluginRef names a scheduler plugin: an in-tree plugin, or
// "webhook/<SchedulerPluginWebhook name>".
type PluginRef struct {
	// Name of the plugin; "*" in disabled clears every default.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Weight multiplies a score plugin's score (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// PluginSet changes the default plugins of one extension point.
type PluginSet struct {
	// Enabled plugins run after the defaults that are not disabled, in
	// order.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Enabled []PluginRef `json:"enabled,omitempty"`
	// Disabled default plugins; "*" disables them all.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Disabled []PluginRef `json:"disabled,omitempty"`
}

// ProfilePlugins are the plugin sets of the extension points.
type ProfilePlugins struct {
	// Filter plugins each remove the clusters an object cannot go to.
	// +optional
	Filter PluginSet `json:"filter,omitempty"`
	// Score plugins rank the remaining clusters (0-100 each, times weight).
	// +optional
	Score PluginSet `json:"score,omitempty"`
	// Select plugins choose among the ranked clusters (maxClusters,
	// spread).
	// +optional
	Select PluginSet `json:"select,omitempty"`
	// Replicas plugins split a Divide object's replicas; the last enabled
	// one decides.
	// +optional
	Replicas PluginSet `json:"replicas,omitempty"`
}

// PluginConfig gives one plugin its arguments.
type PluginConfig struct {
	// Name of the plugin.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Args are the plugin's arguments.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Args apiextensionsv1.JSON `json:"args"`
}

// SchedulingProfileSpec composes the scheduler's plugins.
type SchedulingProfileSpec struct {
	// Plugins change the defaults per extension point.
	// +optional
	Plugins ProfilePlugins `json:"plugins,omitempty"`
	// PluginConfig holds plugin arguments.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	PluginConfig []PluginConfig `json:"pluginConfig,omitempty"`
}

// SchedulingProfileStatus reports whether the profile can be used.
type SchedulingProfileStatus struct {
	// Conditions: Valid.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SchedulingProfile is a named composition of scheduler plugins that
// propagation policies refer to (placement.schedulingProfile).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=flotilla
// +kubebuilder:printcolumn:name="VALID",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type SchedulingProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SchedulingProfileSpec   `json:"spec"`
	Status SchedulingProfileStatus `json:"status,omitempty"`
}

// SchedulingProfileList is a list of SchedulingProfiles.
//
// +kubebuilder:object:root=true
type SchedulingProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedulingProfile `json:"items"`
}

// WebhookPaths are the URL paths of the extension points a webhook serves;
// an empty path means the webhook does not take part in that point.
type WebhookPaths struct {
	// Filter path, e.g. /filter.
	// +optional
	Filter string `json:"filter,omitempty"`
	// Score path.
	// +optional
	Score string `json:"score,omitempty"`
	// Select path.
	// +optional
	Select string `json:"select,omitempty"`
	// Replicas path.
	// +optional
	Replicas string `json:"replicas,omitempty"`
}

// WebhookTLS configures the connection to a webhook.
type WebhookTLS struct {
	// CABundle is the PEM bundle that signs the webhook's certificate.
	// +optional
	CABundle string `json:"caBundle,omitempty"`
	// ClientCertSecretRef names a Secret in flotilla-system with tls.crt
	// and tls.key to present to the webhook.
	// +optional
	ClientCertSecretRef *SecretReference `json:"clientCertSecretRef,omitempty"`
	// InsecureSkipVerify skips verifying the webhook's certificate.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// FailurePolicy says what a failing webhook means.
// +kubebuilder:validation:Enum=Fail;Ignore
type FailurePolicy string

const (
	// FailurePolicyFail fails the scheduling decision (the placement in
	// force stays; the Scheduled condition says why).
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore skips the webhook.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// SchedulerPluginWebhookSpec says how to call an external scheduler plugin.
// Flotilla sends one request per extension point carrying every candidate
// cluster.
// +kubebuilder:validation:XValidation:rule="has(self.paths.filter) || has(self.paths.score) || has(self.paths.select) || has(self.paths.replicas)",message="set at least one path"
type SchedulerPluginWebhookSpec struct {
	// URL is the webhook's base URL, e.g. https://scheduler-ext.example:8443.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http']",message="url must be an absolute http(s) URL"
	URL string `json:"url"`
	// Paths per extension point.
	Paths WebhookPaths `json:"paths"`
	// TimeoutSeconds bounds each call (default 5).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +kubebuilder:default=5
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// TLS configures HTTPS.
	// +optional
	TLS *WebhookTLS `json:"tls,omitempty"`
	// PayloadVersion is the version of the request and response bodies.
	// +kubebuilder:validation:Enum=v1alpha1
	// +kubebuilder:default=v1alpha1
	// +optional
	PayloadVersion string `json:"payloadVersion,omitempty"`
	// FailurePolicy: Fail (default) or Ignore.
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// SchedulerPluginWebhook is an external scheduler plugin served over HTTP.
// Profiles enable it as "webhook/<name>".
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=spw,categories=flotilla
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type SchedulerPluginWebhook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SchedulerPluginWebhookSpec `json:"spec"`
}

// SchedulerPluginWebhookList is a list of SchedulerPluginWebhooks.
//
// +kubebuilder:object:root=true
type SchedulerPluginWebhookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedulerPluginWebhook `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SchedulingProfile{}, &SchedulingProfileList{}, &SchedulerPluginWebhook{}, &SchedulerPluginWebhookList{})
}
