// Package pull is the hub's side of pull-mode members: a member.Member
// that reaches its cluster through the cluster's agent instead of the
// cluster's apiserver. Applying an object records a ClusterIntent in the
// cluster's hub namespace (flotilla-cluster-<name>); deleting one marks
// the intent for its copy's deletion and deletes it, and the agent's
// finalizer holds it until the member's copy is gone (an intent deleted
// without the mark keeps its copy, release.go); the copy's projection, which the status and propagation
// controllers read, is what the agent reports in the intent's status; the
// cluster's health is the age of the agent's heartbeat Lease, damped like
// a push member's probes. The agent (internal/agent) applies the intents
// with a push member.Session of its own, so both modes share one
// propagation.
package pull
