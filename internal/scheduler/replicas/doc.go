// Package replicas plans how many replicas of a divided workload each
// selected cluster runs: a split by weights within per-cluster minimums and
// maximums (Split), weights from each cluster's water level (WaterLevel),
// and rescheduling that never moves running replicas only because weights
// changed (AvoidDisruption).
//
// Everything here is a pure function of its inputs: the same inputs give
// the same plan, with ties broken by a stable hash of the cluster name and
// a caller-chosen seed (the workload), never by map order.
package replicas
