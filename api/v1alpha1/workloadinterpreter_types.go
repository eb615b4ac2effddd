package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FieldPath is a dotted path of object field names, such as spec.replicas
// or status.readyReplicas (no list indexes, no wildcards).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*$`
type FieldPath string

// Expression is a CEL expression (the dialect of Kubernetes validation
// rules, with Kubernetes' CEL libraries), evaluated under a cost budget.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=4096
type Expression string

// InterpretedKind names the kind an interpreter describes: every version
// of it. The kinds Flotilla describes itself (the apps and batch
// workloads, Pod, ReplicationController, Service) cannot be redescribed.
// +kubebuilder:validation:XValidation:rule="!(has(self.group) && ((self.group == 'apps' && self.kind in ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']) || (self.group == 'batch' && self.kind in ['Job', 'CronJob']))) && !((!has(self.group) || size(self.group) == 0) && self.kind in ['Pod', 'ReplicationController', 'Service'])",message="Flotilla describes this kind itself (a built-in interpreter); it cannot be redescribed"
type InterpretedKind struct {
	// Group is the kind's API group ("" for the core group).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// Kind is the kind's name, e.g. CloneSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`
}

// ReplicasRule says where an object keeps its desired replica count, the
// number a Divide placement splits over members.
type ReplicasRule struct {
	// Path is read for the desired count and written with each member's
	// share.
	Path FieldPath `json:"path"`
	// Default is the count of an object without the field (the kind's API
	// default); 1 when left out, as for most workloads.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Default *int32 `json:"default,omitempty"`
}

// PathRule names one field.
type PathRule struct {
	// Path of the field.
	Path FieldPath `json:"path"`
}

// StatusAggregate is how one status field of the members' copies adds up
// to the host object's.
// +kubebuilder:validation:Enum=Sum;Max;Min;First;Merge;Expression
type StatusAggregate string

// Status aggregates.
const (
	// AggregateSum adds the members' numbers (absent counts 0).
	AggregateSum StatusAggregate = "Sum"
	// AggregateMax takes the largest number any member reports.
	AggregateMax StatusAggregate = "Max"
	// AggregateMin takes the smallest number any member reports.
	AggregateMin StatusAggregate = "Min"
	// AggregateFirst takes the value of the first member (by cluster name)
	// that has the field.
	AggregateFirst StatusAggregate = "First"
	// AggregateMerge merges maps (the first member by cluster name wins a
	// key) and lists (concatenated, duplicates dropped).
	AggregateMerge StatusAggregate = "Merge"
	// AggregateExpression evaluates the field's expression.
	AggregateExpression StatusAggregate = "Expression"
)

// StatusField is one field of the host object's status computed from the
// members' copies.
// +kubebuilder:validation:XValidation:rule="self.aggregate == 'Expression' ? has(self.expression) : !has(self.expression)",message="expression is required with aggregate Expression and allowed only with it"
type StatusField struct {
	// Path of the field in the members' copies and in the host object
	// (under status).
	Path FieldPath `json:"path"`
	// Aggregate says how the members' values add up.
	Aggregate StatusAggregate `json:"aggregate"`
	// Expression computes the host's value (aggregate Expression). It sees
	// `members` (a list of {cluster, object, current}, in cluster-name
	// order) and `template` (the host object); null leaves the field out.
	// +optional
	Expression Expression `json:"expression,omitempty"`
}

// ConditionAggregate is how a condition type of the members' copies adds
// up to the host object's condition.
// +kubebuilder:validation:Enum=AllTrue;AnyTrue
type ConditionAggregate string

// Condition aggregates.
const (
	// ConditionAllTrue: True when every member's copy has it True; its
	// message names the members that hold it back.
	ConditionAllTrue ConditionAggregate = "AllTrue"
	// ConditionAnyTrue: True when any member's copy has it True; its
	// message names those members.
	ConditionAnyTrue ConditionAggregate = "AnyTrue"
)

// StatusCondition is a condition type of the host object computed from
// the same condition type of the members' copies (status.conditions, a
// list of {type, status, reason, message}).
type StatusCondition struct {
	// Type of the condition, e.g. Available.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`
	// Aggregate says how the members' conditions add up.
	Aggregate ConditionAggregate `json:"aggregate"`
}

// StatusRule says how the members' statuses add up to the host object's
// status. Fields it does not name stay as they are on the host.
type StatusRule struct {
	// ObservedGeneration is where a copy's status says which generation its
	// controller has seen. The host's field of the same path is the
	// template's generation once every member holds the current template
	// and has seen it, else it keeps its previous value.
	// +optional
	ObservedGeneration *PathRule `json:"observedGeneration,omitempty"`
	// Fields are computed one by one.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=path
	// +optional
	Fields []StatusField `json:"fields,omitempty"`
	// Conditions are computed per type; the host's other conditions are
	// dropped.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []StatusCondition `json:"conditions,omitempty"`
}

// HealthRule says how healthy one member's copy is. Each expression sees
// `object`, the member's copy with its status.
type HealthRule struct {
	// Ready is true when the copy serves as it should (e.g. every replica
	// ready). Graceful eviction waits for it on the new members when the
	// kind has no ready-replica count.
	// +optional
	Ready Expression `json:"ready,omitempty"`
	// Progressing is true while the copy moves towards its spec (a
	// rollout or scale in progress).
	// +optional
	Progressing Expression `json:"progressing,omitempty"`
	// Failed is true when the copy cannot get well without a change (e.g.
	// its rollout exceeded a deadline).
	// +optional
	Failed Expression `json:"failed,omitempty"`
	// ReadyReplicas is the copy's number of ready pods (an int): graceful
	// eviction waits for it on the new members.
	// +optional
	ReadyReplicas Expression `json:"readyReplicas,omitempty"`
	// Pods is the number of the copy's pods that exist, ready or not (an
	// int): application failover compares it with ReadyReplicas.
	// +optional
	Pods Expression `json:"pods,omitempty"`
}

// RolloutRule lets a federated rollout govern the kind (docs/rollouts.md):
// a change of a divided object's pod template rolls out under one
// maxSurge/maxUnavailable budget across the members, each member's copy
// held on the pods it runs until it is admitted with its share. The kind's
// controller must honour the paused field (it stops updating pods while it
// is true) and the budget fields.
type RolloutRule struct {
	// Paused is a boolean field that holds a copy on its current pods while
	// true (a CloneSet's spec.updateStrategy.paused). On the host object it
	// pauses the federated rollout, as spec.paused does a Deployment's.
	// +kubebuilder:validation:MinLength=1
	Paused FieldPath `json:"paused"`
	// MaxSurge is the kind's int-or-percent surge field (a CloneSet's
	// spec.updateStrategy.maxSurge): the federation's surge is read from
	// the host object's (25% when unset) and each rolling copy's share is
	// written to its copy's. Without it the kind does not surge.
	// +optional
	MaxSurge FieldPath `json:"maxSurge,omitempty"`
	// MaxUnavailable is the kind's int-or-percent unavailability field (a
	// CloneSet's spec.updateStrategy.maxUnavailable), read and written as
	// MaxSurge (25% when unset; 1 when the budget would be 0/0).
	// +optional
	MaxUnavailable FieldPath `json:"maxUnavailable,omitempty"`
	// DefaultMaxSurge and DefaultMaxUnavailable are the kind's own
	// defaults, for a host object that leaves the fields unset (its
	// defaulting webhook does not run on the host): a CloneSet's 0 and
	// 20%. Without them 25% each.
	// +optional
	DefaultMaxSurge *intstr.IntOrString `json:"defaultMaxSurge,omitempty"`
	// +optional
	DefaultMaxUnavailable *intstr.IntOrString `json:"defaultMaxUnavailable,omitempty"`
	// Partition is the kind's int-or-percent partition field (a
	// CloneSet's spec.updateStrategy.partition): a held copy also gets a
	// partition of 100%, so that pods it adds while held (a scale-up) start
	// on the old template too; a host object that sets a partition itself
	// is a rollout its user drives, not governed by the federation.
	// +optional
	Partition FieldPath `json:"partition,omitempty"`
	// UpdatedReplicas is how many of a member copy's replicas run its
	// current template (an int over `object`); default
	// object.status.updatedReplicas.
	// +optional
	UpdatedReplicas Expression `json:"updatedReplicas,omitempty"`
	// AvailableReplicas is how many of a member copy's replicas are
	// available (an int over `object`); default
	// object.status.availableReplicas.
	// +optional
	AvailableReplicas Expression `json:"availableReplicas,omitempty"`
}

// WorkloadInterpreterSpec describes one kind of workload.
// +kubebuilder:validation:XValidation:rule="!has(self.rollout) || (has(self.replicas) && has(self.podTemplate))",message="rollout needs replicas and podTemplate: a federated rollout divides the replicas and watches the pod template"
type WorkloadInterpreterSpec struct {
	// Target is the kind described, every version of it.
	Target InterpretedKind `json:"target"`
	// Replicas is where the desired replica count is; without it the kind
	// has none, and Divide placements give every member the whole object.
	// +optional
	Replicas *ReplicasRule `json:"replicas,omitempty"`
	// PodTemplate is the path of the kind's pod template (a
	// PodTemplateSpec): its resource requests feed scheduling, the
	// ConfigMaps, Secrets, ServiceAccounts and claims it references follow
	// the object, and image overrides reach its containers.
	// +optional
	PodTemplate *PathRule `json:"podTemplate,omitempty"`
	// Selector is the path of the label selector of the kind's pods
	// (application failover counts them).
	// +optional
	Selector *PathRule `json:"selector,omitempty"`
	// Status says how the members' statuses add up to the host's; without
	// it the host object's status is left alone.
	// +optional
	Status *StatusRule `json:"status,omitempty"`
	// Health says how healthy one member's copy is.
	// +optional
	Health *HealthRule `json:"health,omitempty"`
	// Rollout lets a federated rollout govern the kind's pod template
	// changes; without it each member rolls its copy on its own. It needs
	// Replicas and PodTemplate.
	// +optional
	Rollout *RolloutRule `json:"rollout,omitempty"`
	// Followers is an expression over `object` (the host object) giving
	// more objects that follow it to its members besides those of its pod
	// template: a list of {kind, name} in the object's namespace, kind one
	// of ConfigMap, Secret, ServiceAccount, PersistentVolumeClaim.
	// +optional
	Followers Expression `json:"followers,omitempty"`
	// Retain lists fields the member owns: a copy keeps its member's value
	// of them (e.g. a field a member-side controller sets).
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Retain []FieldPath `json:"retain,omitempty"`
}

// WorkloadInterpreterStatus reports whether the interpreter is in use.
type WorkloadInterpreterStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (compiled, type-checked and in use).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkloadInterpreter tells Flotilla how to read one kind of workload it
// has no built-in knowledge of (a CRD): its replicas, pod template, status
// and health. Its name is the kind in lower case, a dot and the group
// (clonesets.apps.kruise.io is named cloneset.apps.kruise.io).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wi,categories=flotilla
// +kubebuilder:printcolumn:name="GROUP",type=string,JSONPath=`.spec.target.group`
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == (!has(self.spec.target.group) || size(self.spec.target.group) == 0 ? self.spec.target.kind.lowerAscii() : self.spec.target.kind.lowerAscii() + '.' + self.spec.target.group)",message="the name must be the target's kind in lower case, a dot and its group (e.g. cloneset.apps.kruise.io)"
type WorkloadInterpreter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadInterpreterSpec   `json:"spec"`
	Status WorkloadInterpreterStatus `json:"status,omitempty"`
}

// WorkloadInterpreterList is a list of WorkloadInterpreters.
//
// +kubebuilder:object:root=true
type WorkloadInterpreterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadInterpreter `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadInterpreter{}, &WorkloadInterpreterList{})
}
