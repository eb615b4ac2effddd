package pull

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// intent is what the hub keeps of a ClusterIntent in its cache: everything
// but spec.object, of which only the identity stays (the object itself
// can be large, and the hub never reads it back).
type intent struct{ u *unstructured.Unstructured }

// slim is the intent cache's transform: it drops spec.object but its
// apiVersion, kind, name and namespace.
func slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if o, _ := spec["object"].(map[string]any); o != nil {
		md, _ := o["metadata"].(map[string]any)
		id := map[string]any{}
		for _, k := range []string{"name", "namespace"} {
			if v, ok := md[k]; ok {
				id[k] = v
			}
		}
		spec["object"] = map[string]any{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": id}
	}
	u.SetManagedFields(nil)
	return u, nil
}

func (i intent) str(path ...string) string {
	s, _, _ := unstructured.NestedString(i.u.Object, path...)
	return s
}

// resource is the member resource of the intended object.
func (i intent) resource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: i.str("spec", "resource", "group"), Version: i.str("spec", "resource", "version"), Resource: i.str("spec", "resource", "resource")}
}

// object returns the intended object's namespace and name.
func (i intent) object() (namespace, name string) {
	return i.str("spec", "object", "metadata", "namespace"), i.str("spec", "object", "metadata", "name")
}

// isFor reports whether the intent is the one of the object of resource
// gr (any version) named namespace/name.
func (i intent) isFor(gr schema.GroupResource, namespace, name string) bool {
	ns, n := i.object()
	return i.resource().GroupResource() == gr && ns == namespace && n == name
}

// hash is spec.hash.
func (i intent) hash() string { return i.str("spec", "hash") }

// adopt is spec.adopt.
func (i intent) adopt() bool {
	b, _, _ := unstructured.NestedBool(i.u.Object, "spec", "adopt")
	return b
}

// suspended is spec.suspended.
func (i intent) suspended() bool {
	b, _, _ := unstructured.NestedBool(i.u.Object, "spec", "suspended")
	return b
}

// keepLive is spec.keepLive.
func (i intent) keepLive() []string {
	s, _, _ := unstructured.NestedStringSlice(i.u.Object, "spec", "keepLive")
	return s
}

// observed reports whether the agent has acted on the current spec.
func (i intent) observed() bool {
	g, _, _ := unstructured.NestedInt64(i.u.Object, "status", "observedGeneration")
	return g == i.u.GetGeneration()
}

// outcome and message are the agent's report.
func (i intent) outcome() string { return i.str("status", "outcome") }
func (i intent) message() string { return i.str("status", "message") }

// copy is the projection of the member's copy the agent reported, nil
// when it reported none. It shares the cache's maps: do not modify it.
func (i intent) copy() *unstructured.Unstructured {
	c, _ := i.u.Object["status"].(map[string]any)
	if m, _ := c["copy"].(map[string]any); len(m) > 0 {
		return &unstructured.Unstructured{Object: m}
	}
	return nil
}

// deleting reports whether the intent is being deleted.
func (i intent) deleting() bool { return i.u.GetDeletionTimestamp() != nil }

// byObject indexes intents by the kind, namespace and name of their object
// (objectKey), which is what a deletion names.
const byObject = "object"

// objectKey identifies an object by group, kind, namespace and name.
func objectKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + "/" + namespace + "/" + name
}

func indexObject(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	i := intent{u}
	ns, name := i.object()
	gv, err := schema.ParseGroupVersion(i.str("spec", "object", "apiVersion"))
	if err != nil {
		return nil, nil
	}
	return []string{objectKey(gv.WithKind(i.str("spec", "object", "kind")).GroupKind(), ns, name)}, nil
}

// copyStatusOnly reports whether an intent's update changed nothing but
// the status of the reported copy: the spec, the agent's verdict and the
// copy's generation, labels and annotations are as they were. Anything
// else is news for propagation, not only for status aggregation.
func copyStatusOnly(old, cur intent) bool {
	if old.u.GetGeneration() != cur.u.GetGeneration() || !old.u.GetDeletionTimestamp().Equal(cur.u.GetDeletionTimestamp()) ||
		old.observed() != cur.observed() || old.outcome() != cur.outcome() || old.message() != cur.message() {
		return false
	}
	oc, cc := old.copy(), cur.copy()
	if oc == nil || cc == nil {
		return oc == nil && cc == nil
	}
	return oc.GetGeneration() == cc.GetGeneration() && cc.GetGeneration() != 0 &&
		equality.Semantic.DeepEqual(oc.GetLabels(), cc.GetLabels()) &&
		equality.Semantic.DeepEqual(oc.GetAnnotations(), cc.GetAnnotations())
}
