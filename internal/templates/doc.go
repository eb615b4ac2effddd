// Package templates watches the host objects Flotilla may propagate: every
// listable, watchable resource the host serves (CRDs installed later
// included, found by periodic and CRD-triggered discovery), minus the kinds
// that are never templates (events, leases, endpoints, ...). It gives the
// propagation controllers cached reads, lookups by the policy labels, and
// change notifications, and names the FederatedObject of each template.
package templates
