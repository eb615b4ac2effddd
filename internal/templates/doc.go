// Package templates watches the host objects Flotilla may propagate: every
// listable, watchable resource the host serves (CRDs installed later
// included, found by periodic and CRD-triggered discovery), minus the kinds
// that are never templates (events, leases, endpoints, ...) and the kinds
// the controller-manager may not list and watch (asked with
// SelfSubjectAccessReviews). Secrets are watched only on demand: while a
// policy selects them or a propagated workload references one. It gives
// the propagation controllers cached reads, lookups by the policy labels,
// and change notifications, and names the FederatedObject of each
// template.
//
// Permissions: read the template kinds of the common built-in API groups
// (the core group without Secrets; not admissionregistration.k8s.io, whose
// webhooks would see every object). No write: a patch of every kind would
// include ClusterRoles, a write of the host's RBAC. Removing the finalizer
// earlier versions put on templates needs patch, which a host upgraded
// from them grants for the upgrade only (config/rbac/optional.yaml). Other
// kinds (custom resources) and Secrets need an explicit grant
// (config/rbac/optional.yaml): get, list and watch.
//
// +kubebuilder:rbac:groups="",resources=configmaps;limitranges;namespaces;persistentvolumeclaims;persistentvolumes;pods;podtemplates;replicationcontrollers;resourcequotas;serviceaccounts;services,verbs=get;list;watch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=apps;batch;autoscaling;policy;networking.k8s.io;storage.k8s.io;scheduling.k8s.io;node.k8s.io;rbac.authorization.k8s.io;apiextensions.k8s.io,resources=*,verbs=get;list;watch
package templates
