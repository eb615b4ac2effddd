package templates

// excludedGroups are API groups whose objects are never templates: the
// federation's own API, and machinery that belongs to each cluster.
var excludedGroups = map[string]bool{
	"flotilla.io":               true,
	"coordination.k8s.io":       true,
	"events.k8s.io":             true,
	"discovery.k8s.io":          true,
	"apiregistration.k8s.io":    true,
	"authentication.k8s.io":     true,
	"authorization.k8s.io":      true,
	"certificates.k8s.io":       true,
	"metrics.k8s.io":            true,
	"internal.apiserver.k8s.io": true,
	"resource.k8s.io":           true,
	"storagemigration.k8s.io":   true,
}

// excludedResources are resources ("resource.group", "resource" for the
// core group) of other groups that belong to each cluster.
var excludedResources = map[string]bool{
	"events":                              true,
	"endpoints":                           true,
	"nodes":                               true,
	"componentstatuses":                   true,
	"bindings":                            true,
	"controllerrevisions.apps":            true,
	"csinodes.storage.k8s.io":             true,
	"volumeattachments.storage.k8s.io":    true,
	"csistoragecapacities.storage.k8s.io": true,
	"ipaddresses.networking.k8s.io":       true,
	"servicecidrs.networking.k8s.io":      true,
}

// Excluded reports whether a resource of a group is never a template.
func Excluded(group, resource string) bool {
	if excludedGroups[group] {
		return true
	}
	if group == "" {
		return excludedResources[resource]
	}
	return excludedResources[resource+"."+group]
}
