// Package scheduler holds what the scheduling controller needs around the
// plugin framework (package framework, plugins under plugins/): NewUnit
// describes an object for the plugins (with the policy's placement
// narrowed, never widened, by the object's annotations), Basis digests
// what a decision depends on so that only a real change reschedules, and
// replicas/ is the pure replica planner the Replicas plugin uses.
package scheduler
