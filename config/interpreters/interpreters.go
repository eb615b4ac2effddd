// Package interpreters embeds the WorkloadInterpreters Flotilla ships for
// widely used workload CRDs (OpenKruise, Argo Rollouts, ...). The
// controller-manager's leader applies them to the host unless told not to;
// users may edit them there or write their own (docs/custom-workloads.md).
package interpreters

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

// All returns the shipped interpreters, sorted by name.
func All() ([]*v1alpha1.WorkloadInterpreter, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]*v1alpha1.WorkloadInterpreter, 0, len(names))
	for _, n := range names {
		raw, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		wi := &v1alpha1.WorkloadInterpreter{}
		if err := yaml.UnmarshalStrict(raw, wi); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, wi)
	}
	return out, nil
}

// Named returns the shipped interpreter of that name.
func Named(name string) (*v1alpha1.WorkloadInterpreter, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	for _, wi := range all {
		if wi.Name == name {
			return wi, nil
		}
	}
	return nil, fmt.Errorf("no shipped WorkloadInterpreter %s", name)
}
