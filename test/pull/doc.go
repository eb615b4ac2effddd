// Package pull is the end-to-end test of pull members: one `flotilla up
// --members 3 --pull-members 1` environment (member-1 and member-2 push,
// member-3 pull, with a `flotilla agent` process), driven with kubectl-equivalent
// clients against the host and with faults injected by signalling the
// agent and the host's apiserver. It runs beside test/e2e, in its own
// package, so that both share the machine's cores.
package pull
