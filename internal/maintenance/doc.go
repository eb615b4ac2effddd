// Package maintenance holds the cluster maintenance operations behind
// `flotilla cordon`, `uncordon` and `drain`: the taints they set on a
// MemberCluster, the checks that keep a drain from stranding workloads,
// and the view of the objects still on a cluster being drained. The
// command line only parses flags and prints; a future API or agent can
// call the same operations.
package maintenance
