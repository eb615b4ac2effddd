package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Key identifies a host object by group, kind, namespace and name. The
// version is not part of it: a kind is watched in the host's preferred
// version.
type Key struct {
	Group, Kind, Namespace, Name string
}

// KeyOf returns the key of an object.
func KeyOf(obj *unstructured.Unstructured) Key {
	gvk := obj.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// KeyOfReference returns the key of a FederatedObject's template.
func KeyOfReference(ref v1alpha1.TemplateReference) Key {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return Key{Group: gv.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// GroupKind returns the key's group and kind.
func (k Key) GroupKind() schema.GroupKind { return schema.GroupKind{Group: k.Group, Kind: k.Kind} }

// String is "Kind.group namespace/name".
func (k Key) String() string {
	gk := k.GroupKind().String()
	if k.Namespace == "" {
		return gk + " " + k.Name
	}
	return gk + " " + k.Namespace + "/" + k.Name
}

// FederatedName returns the namespace and name of the FederatedObject of
// the object: the object's namespace (flotilla-system for cluster-scoped
// objects) and "<name>.<kind>[.<group>]" in lower case, for example
// web.deployment.apps or settings.configmap. A result that would not be a
// valid object name (too long, or a name with characters such as ':') is
// shortened and made unique with a hash.
func (k Key) FederatedName() types.NamespacedName {
	ns := k.Namespace
	if ns == "" {
		ns = v1alpha1.SystemNamespace
	}
	name := strings.ToLower(k.Name + "." + k.Kind)
	if k.Group != "" {
		name += "." + strings.ToLower(k.Group)
	}
	if len(validation.IsDNS1123Subdomain(name)) == 0 && name == strings.ToLower(name) && k.Name == strings.ToLower(k.Name) {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	sum := sha256.Sum256([]byte(k.Group + "/" + k.Kind + "/" + k.Name))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	var b strings.Builder
	for _, r := range strings.ToLower(k.Name + "." + k.Kind) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	prefix := strings.Trim(b.String(), "-.")
	if max := validation.DNS1123SubdomainMaxLength - len(suffix); len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return types.NamespacedName{Namespace: ns, Name: prefix + suffix}
}

// keyOfStoreKey turns an informer store's key (namespace/name, or name)
// into a template Key of kind gk.
func keyOfStoreKey(gk schema.GroupKind, key string) Key {
	ns, name, found := strings.Cut(key, "/")
	if !found {
		ns, name = "", key
	}
	return Key{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: name}
}
