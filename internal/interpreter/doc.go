// Package interpreter turns a WorkloadInterpreter spec (flotilla.io) into
// the operations Flotilla performs on objects of one kind: reading and
// writing their desired replicas, finding their pod template and pod
// selector, judging a member copy's health, naming extra followers, and
// adding the members' statuses up to the host object's status.
//
// Expressions are CEL in the dialect of Kubernetes validation rules (the
// k8s.io/apiserver CEL environment and libraries). Compile checks them
// against the kind's structural schema when one is given (a CRD's), so a
// misspelt field is an error before anything runs, and refuses an
// expression whose estimated cost exceeds the per-call budget. Every
// evaluation also runs under that budget, so no object can make an
// expression run away. Evaluation itself is schema-free: objects are the
// unstructured maps the controllers already hold.
package interpreter
