// Package member holds the control plane's connection to one member
// cluster: the client built from the MemberCluster's Secret, the health
// probe and its damping, API discovery, pruned node and pod caches that
// sum the member's allocatable and available resources, and a cache of
// unbound pods that tells which replicas the member cannot schedule.
//
// A Session owns all goroutines of one member; Stop ends them. The cluster
// controller (internal/controller/cluster) keeps one Session per
// MemberCluster and turns what it observes into status and taints.
package member
