// Package chaos injects faults into one running `flotilla up` environment
// and checks that nothing is lost: the host apiserver down for longer than
// the controller-manager's lease, the host etcd restarted, a member that
// answers slowly and a member that rejects writes. Every scenario ends
// with the same checks: each member copy of the seeded workloads still
// exists with the same UID, no member saw a delete of a federated kind,
// the host objects are intact, and a change made after recovery reaches
// every member while the host status settles. The scenarios run one after
// another in the shared environment and each restores health before the
// next. It skips under -short.
package chaos
