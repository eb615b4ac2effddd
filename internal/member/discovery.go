package member

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Discover lists the resources the member serves in every group version,
// without subresources, sorted by group, version and resource. A group
// version whose aggregated apiserver is down is left out; the others are
// returned with the error.
func Discover(client discovery.DiscoveryInterface) ([]v1alpha1.APIResource, error) {
	_, lists, err := client.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover API resources: %w", err)
	}
	var out []v1alpha1.APIResource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			scope := v1alpha1.ScopeCluster
			if r.Namespaced {
				scope = v1alpha1.ScopeNamespaced
			}
			out = append(out, v1alpha1.APIResource{Group: gv.Group, Version: gv.Version, Kind: r.Kind, Resource: r.Name, Scope: scope})
		}
	}
	SortAPIResources(out)
	return out, err
}

// SortAPIResources sorts by group, version and resource.
func SortAPIResources(rs []v1alpha1.APIResource) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Resource < b.Resource
	})
}
