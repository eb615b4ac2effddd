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
// webhooks would see every object). Flotilla puts no finalizer on
// templates any more; patch remains only so that the federate controller
// can remove the finalizer earlier versions set (hosts upgraded from
// them), and goes once no host carries it. Other kinds (custom resources)
// and Secrets need an explicit grant (config/rbac/optional.yaml): get,
// list and watch, plus patch where such objects may still carry the
// legacy finalizer.
//
// +kubebuilder:rbac:groups="",resources=configmaps;limitranges;namespaces;persistentvolumeclaims;persistentvolumes;pods;podtemplates;replicationcontrollers;resourcequotas;serviceaccounts;services,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=apps;batch;autoscaling;policy;networking.k8s.io;storage.k8s.io;scheduling.k8s.io;node.k8s.io;rbac.authorization.k8s.io;apiextensions.k8s.io,resources=*,verbs=get;list;watch;patch
package templates
