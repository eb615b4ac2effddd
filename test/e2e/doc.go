// Package e2e drives the flotilla binary the way a user does: `flotilla up`,
// kubectl-equivalent clients against the clusters it starts, `flotilla
// status`, `flotilla down`. Failures are injected by stopping processes.
package e2e
