// Package gateway is `flotilla gateway`: the federation's one
// Kubernetes-compatible endpoint, built on k8s.io/apiserver's generic
// server and its filters (authentication, audit, impersonation, in-flight
// limits, authorization, panic recovery, timeouts).
//
// Authentication and authorization are delegated to the host apiserver
// (TokenReview, SubjectAccessReview; client certificates against the
// host's client CA). Requests for host kinds are proxied to the host as
// the authenticated user (proxy.go: with the user's own bearer token when
// that alone authenticated the request, usertoken.go; otherwise by
// impersonation), so the host's RBAC,
// admission and error messages apply unchanged. Member-only kinds (pods,
// events, nodes, EndpointSlices, ReplicaSets) are served from a
// multi-cluster cache (memberserve.go, memberwatch.go) that members.go
// feeds from every member: push members with their credentials Secret,
// pull members through the tunnel their agent opens (tunnel.go,
// internal/tunnel). A pod's logs, exec, attach, port-forward and deletion
// are routed to the member that runs it (route.go). The gateway's own
// paths (/healthz, /livez, /readyz, /metrics) are served locally.
package gateway
