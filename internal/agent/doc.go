// Package agent is `flotilla agent`: the process that runs in (or beside)
// a pull-mode member with the member's own credentials and a narrow
// credential for the hub. It watches the ClusterIntents in its cluster's
// hub namespace and applies them to the member with the same push session
// and server-side apply the control plane uses for push members
// (internal/member, internal/dispatch): drift is reverted from a watch of
// the managed copies, adoption and conflicts follow the intent, deletion
// waits on the intent's finalizer. It reports each copy's projection in
// the intent's status, renews a heartbeat Lease carrying the member's
// health, and writes the member's version, served kinds and capacity into
// its MemberCluster's status.
//
// While the hub is unreachable the agent keeps applying what it last saw
// and reverting drift from its caches; its reports wait until the hub
// returns, when a relist of unchanged intents writes nothing to the
// member.
package agent
