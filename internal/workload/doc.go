// Package workload holds Flotilla's built-in knowledge of native workload
// kinds: where their replicas and pod templates live, which objects their
// pods reference (followers), and how the member copies' status adds up to
// the host object's status. Kinds it does not know are handled generically
// (an integer spec.replicas is taken as replicas; status is left alone).
package workload
