package components

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Names of the component binaries in a Set.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
	MetricsServer         = "metrics-server"
)

// Binaries lists every binary a complete Set holds, in build order.
var Binaries = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok, MetricsServer}

// KwokStages lists the kwok configuration files a complete Set holds (in
// its stages directory), copied from the pinned kwok module: node
// initialisation, node heartbeat with a lease, the fast pod lifecycle, and
// the simulated kubelet resource metrics (served per node at
// /metrics/nodes/<node>/metrics/resource, which metrics-server scrapes)
// with pod usage from the annotations kwok.x-k8s.io/usage-cpu and
// kwok.x-k8s.io/usage-memory.
var KwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
	"kustomize/metrics/resource/metrics-resource.yaml",
	"kustomize/metrics/usage/usage-from-annotation.yaml",
}

// Set is a directory holding a complete set of component binaries and kwok
// stage files.
type Set struct {
	// Dir is the directory holding the binaries.
	Dir string
}

// Path returns the path of the named binary (one of Binaries).
func (s Set) Path(name string) string { return filepath.Join(s.Dir, name) }

// StageFiles returns the paths of the kwok stage files, in KwokStages order.
func (s Set) StageFiles() []string {
	files := make([]string, 0, len(KwokStages))
	for _, st := range KwokStages {
		files = append(files, filepath.Join(s.Dir, "stages", filepath.Base(st)))
	}
	return files
}

// Validate reports whether every binary and stage file of the set is present.
func (s Set) Validate() error {
	var errs []error
	for _, b := range Binaries {
		if fi, err := os.Stat(s.Path(b)); err != nil {
			errs = append(errs, fmt.Errorf("missing %s: %w", b, err))
		} else if fi.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is not executable", s.Path(b)))
		}
	}
	for _, f := range s.StageFiles() {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("missing kwok stage: %w", err))
		}
	}
	return errors.Join(errs...)
}
