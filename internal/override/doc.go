// Package override applies the overriders of OverridePolicy and
// ClusterOverridePolicy rules to one member cluster's rendered copy of a
// host object: it rewrites container images, commands, args and
// environment variables in the pod template, sets and removes the object's
// labels and annotations, and applies RFC 6902 JSON patches, while refusing
// any change to the object's identity (apiVersion, kind, name, namespace).
package override
