// Package membercache holds the gateway's multi-cluster cache of member
// kinds (Pods, Events, Nodes, EndpointSlices, ReplicaSets): per member and
// kind a watch of the member's apiserver, each object kept as its pruned
// JSON with a small index (namespace, name, labels, the fields selectors
// read), a resourceVersion of the cache's own that a watch can resume
// from, and the recent changes a resumed watch replays.
//
// The cache is what the gateway (internal/gateway) serves lists, gets and
// watches of member kinds from; it knows nothing of HTTP. A Cache holds
// all kinds; a Source feeds one kind of one member into it.
package membercache
