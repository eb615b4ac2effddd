package dispatch

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A projection is what a member cache keeps of a managed copy instead of
// the whole object: what the controllers read (identity, labels,
// annotations, generation, the pod selector, spec.replicas and the whole
// status) plus the owned-field hash of the rest (owned.go). Apply accepts a
// projection as Options.Live: equal hashes mean nothing to write; otherwise
// it reads the copy from the member before deciding.

// projectionKey holds a projection's owned-field hash. It is a top-level
// key no Kubernetes object has, so nothing that reads a projection by
// field path sees it, and a projection is never sent anywhere.
const projectionKey = "flotilla.io/projection"

// noOwnedFields is the projection hash of a copy without Flotilla's apply
// entry: it matches no intent.
const noOwnedFields = "none"

// lastApplied is kubectl's record of its last client-side apply: large,
// and nothing here reads it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// keptSpec are the spec fields a projection keeps: comparedByValue's and
// the pod selector (workload.PodSelector).
var keptSpec = []string{"replicas", "selector"}

// Project returns the projection of a member object (obj is not modified;
// the projection shares values with it). It is a cache transform: any
// other type, and a projection, is returned as it is.
func Project(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || IsProjection(u) {
		return obj, nil
	}
	hash, ok := liveOwnedHash(u.Object)
	if !ok {
		hash = noOwnedFields
	}
	out := map[string]any{projectionKey: hash}
	for _, k := range []string{"apiVersion", "kind", "status"} {
		if v, found := u.Object[k]; found {
			out[k] = v
		}
	}
	md := map[string]any{}
	src, _ := u.Object["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace", "resourceVersion", "generation", "labels", "deletionTimestamp"} {
		if v, found := src[k]; found {
			md[k] = v
		}
	}
	if a, _ := src["annotations"].(map[string]any); len(a) > 0 {
		if _, found := a[lastApplied]; found {
			trimmed := make(map[string]any, len(a))
			for k, v := range a {
				if k != lastApplied {
					trimmed[k] = v
				}
			}
			a = trimmed
		}
		md["annotations"] = a
	}
	if ok {
		// Written reads this; the fields are in the hash.
		md["managedFields"] = []any{map[string]any{"manager": FieldManager, "operation": "Apply"}}
	}
	out["metadata"] = md
	if !builtIn(u) {
		// A custom kind keeps its whole spec: its WorkloadInterpreter's
		// expressions (health, pod counts) may read any of it, and the
		// interpreter may be created after the copy was cached.
		if v, found := u.Object["spec"]; found {
			out["spec"] = v
		}
		return &unstructured.Unstructured{Object: out}, nil
	}
	spec := map[string]any{}
	for _, p := range keptSpec {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", p); found {
			spec[p] = v // shared, not copied: the rest of u is dropped
		}
	}
	if len(spec) > 0 {
		out["spec"] = spec
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// builtIn reports whether obj's kind is one of Kubernetes' own (the core
// group, or a group without a dot or ending in .k8s.io): kinds whose
// meaning Flotilla knows without an interpreter.
func builtIn(obj *unstructured.Unstructured) bool {
	g := obj.GroupVersionKind().Group
	return g == "" || !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io")
}

// IsProjection reports whether obj is a projection rather than a whole
// object.
func IsProjection(obj *unstructured.Unstructured) bool {
	_, ok := obj.Object[projectionKey]
	return ok
}

// projectionHash is the owned-field hash a projection carries.
func projectionHash(obj *unstructured.Unstructured) string {
	h, _ := obj.Object[projectionKey].(string)
	return h
}

// Verified remembers, per copy, owned-field hashes that a full comparison
// found to match an intent although they differ from its hash (a value the
// member spells its own way). Without it each such copy would be read from
// the member on every pass. It is bounded: when full it forgets
// everything, which costs one read per such copy.
type Verified struct {
	mu sync.Mutex
	m  map[string]verifiedEntry
}

type verifiedEntry struct{ intent, live string }

// maxVerified bounds a Verified.
const maxVerified = 1 << 16

// NewVerified returns an empty Verified.
func NewVerified() *Verified { return &Verified{m: map[string]verifiedEntry{}} }

func (v *Verified) matches(key, intent, live string) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.m[key]
	return ok && e.intent == intent && e.live == live
}

func (v *Verified) record(key, intent, live string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if intent == live {
		delete(v.m, key)
		return
	}
	if len(v.m) >= maxVerified {
		clear(v.m)
	}
	v.m[key] = verifiedEntry{intent: intent, live: live}
}

// Len returns how many copies a Verified remembers.
func (v *Verified) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.m)
}
