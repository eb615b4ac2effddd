// Package components builds, caches and locates the pinned Kubernetes
// component binaries that the local environment runs: kube-apiserver,
// kube-controller-manager and kube-scheduler from k8s.io/kubernetes, etcd and
// the kwok controller, together with kwok's node and pod stage definitions.
//
// The pins live in the separate Go module hack/tools, so the main module never
// depends on k8s.io/kubernetes. Binaries are built once into a cache directory
// keyed by a hash of that module (its go.mod, go.sum and sources) and the Go
// toolchain, so a change of pin triggers a rebuild and anything else reuses
// the cache.
package components
