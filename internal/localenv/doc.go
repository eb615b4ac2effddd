// Package localenv runs the local Flotilla environment on one machine: a host
// control plane (etcd, kube-apiserver and a kube-controller-manager running
// only the namespace and garbage-collector controllers) and N member clusters
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with
// fake nodes, or only etcd and kube-apiserver in apiserver-only mode).
//
// It is the engine behind `flotilla up|down|status|kubeconfig` and behind the
// test helper in internal/testenv. Everything an environment owns (kubeconfigs,
// certificates, logs, pids, etcd data) lives in its state directory, described
// by a state.json file, so that two environments with different state
// directories run side by side.
package localenv
