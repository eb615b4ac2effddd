// Package gateway is `flotilla gateway`: the federation's one
// Kubernetes-compatible endpoint, built on k8s.io/apiserver's generic
// server and its filters (authentication, audit, impersonation, in-flight
// limits, authorization, panic recovery, timeouts).
//
// Authentication and authorization are delegated to the host apiserver
// (TokenReview, SubjectAccessReview; client certificates against the
// host's client CA). Requests for host kinds are proxied to the host as
// the authenticated user (impersonation, proxy.go), so the host's RBAC,
// admission and error messages apply unchanged. The gateway's own paths
// (/healthz, /livez, /readyz, /metrics) are served locally.
//
// Still to come (docs/design/gateway.md): member-only kinds from a
// multi-cluster cache, routed pod operations, admission protections.
package gateway
