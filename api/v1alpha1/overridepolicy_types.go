package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterTarget chooses member clusters by name and/or labels. An empty
// target matches every cluster; with both fields set a cluster must match
// both.
type ClusterTarget struct {
	// ClusterNames lists clusters by name.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ClusterSelector selects clusters by their labels.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// ImageOverrider rewrites parts of container images. A part left empty is
// kept as it is.
// +kubebuilder:validation:XValidation:rule="(has(self.registry) && size(self.registry) > 0) || (has(self.repository) && size(self.repository) > 0) || (has(self.tag) && size(self.tag) > 0) || (has(self.digest) && size(self.digest) > 0)",message="set at least one of registry, repository, tag, digest"
type ImageOverrider struct {
	// ContainerNames limits the override to these containers (init
	// containers included); empty means every container.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	ContainerNames []string `json:"containerNames,omitempty"`

	// Registry replaces the registry host, for example
	// registry.eu.example.com or localhost:5000.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('@')",message="registry is a host[:port], without '/' or '@'"
	// +optional
	Registry string `json:"registry,omitempty"`

	// Repository replaces the repository path, for example library/nginx.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.contains(':') && !self.contains('@')",message="repository must not contain ':' or '@'"
	// +optional
	Repository string `json:"repository,omitempty"`

	// Tag replaces the tag and drops any digest.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`
	// +optional
	Tag string `json:"tag,omitempty"`

	// Digest replaces the digest (sha256:...) and drops any tag.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+:[a-f0-9]{32,}$`
	// +optional
	Digest string `json:"digest,omitempty"`
}

// ListOperator says how an override changes a list of strings.
// +kubebuilder:validation:Enum=Replace;Append
type ListOperator string

const (
	// ListReplace replaces the list.
	ListReplace ListOperator = "Replace"
	// ListAppend appends to the list.
	ListAppend ListOperator = "Append"
)

// CommandOverrider changes one container's command or args.
type CommandOverrider struct {
	// ContainerName is the container (or init container) to change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ContainerName string `json:"containerName"`

	// Operator is Replace (the default) or Append.
	// +kubebuilder:default=Replace
	// +optional
	Operator ListOperator `json:"operator,omitempty"`

	// Values are the new or appended entries.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// EnvVar is one environment variable an override sets.
type EnvVar struct {
	// Name of the variable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Value of the variable.
	// +optional
	Value string `json:"value,omitempty"`
}

// EnvOverrider sets and removes environment variables of containers.
type EnvOverrider struct {
	// ContainerNames limits the override to these containers (init
	// containers included); empty means every container.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	ContainerNames []string `json:"containerNames,omitempty"`

	// Set adds variables, replacing any of the same name.
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	// +optional
	Set []EnvVar `json:"set,omitempty"`

	// Remove deletes variables by name.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// MapOverrider sets and removes keys of the object's labels or annotations.
type MapOverrider struct {
	// Set adds keys, replacing existing values.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Set map[string]string `json:"set,omitempty"`

	// Remove deletes keys.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=317
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// JSONPatchOperation is one RFC 6902 operation.
type JSONPatchOperation struct {
	// Op is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	Op string `json:"op"`

	// Path is a JSON pointer such as /spec/template/spec/priorityClassName.
	// The object's identity (/apiVersion, /kind, /metadata/name,
	// /metadata/namespace) cannot be changed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must be a JSON pointer starting with '/'"
	// +kubebuilder:validation:XValidation:rule="!(self in ['/', '/apiVersion', '/kind', '/metadata', '/metadata/name', '/metadata/namespace', '/metadata/generateName']) && !self.startsWith('/apiVersion/') && !self.startsWith('/kind/') && !self.startsWith('/metadata/name/') && !self.startsWith('/metadata/namespace/')",message="the object's identity (apiVersion, kind, metadata.name, metadata.namespace) cannot be overridden"
	Path string `json:"path"`

	// Value is the JSON value for add and replace.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// Overriders are the changes one rule makes. They apply in this order:
// image, command, args, env, labels, annotations, jsonPatch.
type Overriders struct {
	// Image rewrites container images.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Image []ImageOverrider `json:"image,omitempty"`

	// Command changes container commands.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Command []CommandOverrider `json:"command,omitempty"`

	// Args changes container args.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Args []CommandOverrider `json:"args,omitempty"`

	// Env sets or removes environment variables.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Env []EnvOverrider `json:"env,omitempty"`

	// Labels sets or removes the object's labels.
	// +optional
	Labels *MapOverrider `json:"labels,omitempty"`

	// Annotations sets or removes the object's annotations.
	// +optional
	Annotations *MapOverrider `json:"annotations,omitempty"`

	// JSONPatch applies RFC 6902 operations last.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
}

// OverrideRule applies overriders to the copies in the target clusters.
type OverrideRule struct {
	// TargetClusters chooses the clusters; empty means all.
	// +optional
	TargetClusters ClusterTarget `json:"targetClusters,omitempty"`

	// Overriders are the changes.
	Overriders Overriders `json:"overriders"`
}

// OverrideSpec is what an OverridePolicy or ClusterOverridePolicy says.
type OverrideSpec struct {
	// ResourceSelectors select the objects whose member copies change.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// Rules apply in order.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Rules []OverrideRule `json:"rules"`
}

// OverridePolicy changes the member copies of objects in its namespace per
// cluster. Policies apply after every ClusterOverridePolicy, in name order.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=op,categories=flotilla
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OverrideSpec `json:"spec"`
}

// OverridePolicyList is a list of OverridePolicies.
//
// +kubebuilder:object:root=true
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// ClusterOverridePolicy changes the member copies of objects in any
// namespace, and of cluster-scoped objects, per cluster. Cluster policies
// apply first, in name order.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cop,categories=flotilla
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OverrideSpec `json:"spec"`
}

// ClusterOverridePolicyList is a list of ClusterOverridePolicies.
//
// +kubebuilder:object:root=true
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OverridePolicy{}, &OverridePolicyList{}, &ClusterOverridePolicy{}, &ClusterOverridePolicyList{})
}
