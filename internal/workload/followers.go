package workload

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Kinds of follower objects.
const (
	kindConfigMap      = "ConfigMap"
	kindSecret         = "Secret"
	kindServiceAccount = "ServiceAccount"
	kindPVC            = "PersistentVolumeClaim"
)

// containerLists are the pod spec fields holding containers.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// secretRefPlugins are the volume plugins whose secretRef.name names a
// Secret in the pod's namespace.
var secretRefPlugins = []string{"cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos"}

// Followers returns the ConfigMaps, Secrets, ServiceAccounts and
// PersistentVolumeClaims the object's pod spec references, and those its
// kind's WorkloadInterpreter names, sorted by kind then name, without
// duplicates. Objects without a pod spec (PodSpecPath
// nil) have none. The PersistentVolumeClaims a StatefulSet's
// volumeClaimTemplates or an ephemeral volume stands for are not followers:
// each member creates its own.
func Followers(obj *unstructured.Unstructured) []v1alpha1.ObjectReference {
	if obj == nil {
		return nil
	}
	refs := followerSet{}
	if in := interpreterOf(obj); in != nil {
		// A failing expression names no extra followers; the pod
		// template's still follow.
		extra, _ := in.Followers(obj)
		for _, r := range extra {
			refs.add(r.Kind, r.Name)
		}
	}
	path := PodSpecPath(obj)
	if path == nil {
		return refs.sorted()
	}
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	spec, isMap := raw.(map[string]any)
	if err != nil || !found || !isMap {
		return refs.sorted()
	}

	refs.volumes(spec["volumes"])
	for _, list := range containerLists {
		for _, c := range maps(spec[list]) {
			refs.container(c)
		}
	}
	for _, s := range maps(spec["imagePullSecrets"]) {
		refs.add(kindSecret, text(s, "name"))
	}
	sa := text(spec, "serviceAccountName")
	if sa == "" {
		sa = text(spec, "serviceAccount") // the deprecated alias
	}
	if sa != "default" {
		refs.add(kindServiceAccount, sa)
	}
	return refs.sorted()
}

// followerSet collects follower references without duplicates.
type followerSet map[v1alpha1.ObjectReference]bool

// add records a reference; empty names are ignored.
func (s followerSet) add(kind, name string) {
	if name != "" {
		s[v1alpha1.ObjectReference{Kind: kind, Name: name}] = true
	}
}

// volumes records the objects a pod spec's volumes mount.
func (s followerSet) volumes(list any) {
	for _, v := range maps(list) {
		s.add(kindConfigMap, text(v, "configMap", "name"))
		s.add(kindSecret, text(v, "secret", "secretName"))
		s.add(kindPVC, text(v, "persistentVolumeClaim", "claimName"))
		for _, src := range maps(field(v, "projected", "sources")) {
			s.add(kindConfigMap, text(src, "configMap", "name"))
			s.add(kindSecret, text(src, "secret", "name"))
		}
		s.add(kindSecret, text(v, "csi", "nodePublishSecretRef", "name"))
		s.add(kindSecret, text(v, "azureFile", "secretName"))
		for _, plugin := range secretRefPlugins {
			s.add(kindSecret, text(v, plugin, "secretRef", "name"))
		}
	}
}

// container records the objects a container's environment reads.
func (s followerSet) container(c map[string]any) {
	for _, e := range maps(c["env"]) {
		s.add(kindConfigMap, text(e, "valueFrom", "configMapKeyRef", "name"))
		s.add(kindSecret, text(e, "valueFrom", "secretKeyRef", "name"))
	}
	for _, e := range maps(c["envFrom"]) {
		s.add(kindConfigMap, text(e, "configMapRef", "name"))
		s.add(kindSecret, text(e, "secretRef", "name"))
	}
}

// sorted returns the references ordered by kind then name.
func (s followerSet) sorted() []v1alpha1.ObjectReference {
	if len(s) == 0 {
		return nil
	}
	out := make([]v1alpha1.ObjectReference, 0, len(s))
	for ref := range s {
		out = append(out, ref)
	}
	slices.SortFunc(out, func(a, b v1alpha1.ObjectReference) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// field returns the value at path in m, or nil.
func field(m map[string]any, path ...string) any {
	v, found, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil || !found {
		return nil
	}
	return v
}

// text returns the string at path in m, or "" when there is none.
func text(m map[string]any, path ...string) string {
	s, _ := field(m, path...).(string)
	return s
}

// maps returns the objects in a list value, skipping entries that are not
// objects.
func maps(list any) []map[string]any {
	items, _ := list.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
