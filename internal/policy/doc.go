// Package policy decides, with pure functions, which propagation policy
// propagates a host object and which override rules apply to its copy in a
// member cluster.
package policy
