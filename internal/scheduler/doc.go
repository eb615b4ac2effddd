// Package scheduler decides where a federated object goes: which member
// clusters, and how many replicas each gets. Schedule is the seam the
// scheduling controller calls; it is a pure function of the policy, the
// object's replicas, the clusters and the current placement.
package scheduler
