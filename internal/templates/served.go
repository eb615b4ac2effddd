package templates

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// An object whose kind the cache does not watch has no delete event to
// tell its fate. When its kind is still served (the controller-manager may
// not watch it), the host is asked about the object. When the host no
// longer serves the kind at all, the objects went with it only if its CRD
// was deleted: a CRD that stops serving every version (served: false)
// keeps its objects, an aggregated API unregistered for a while comes back
// with them, and a kind Kubernetes itself serves is never removed that
// way. Only evidence counts: the kind's CRD is being deleted, or the cache
// saw it deleted. Without it (a CRD deleted while the controller-manager
// was down looks the same as an aggregated API unregistered) the answer
// stays "not known", and what depends on it keeps the copies and says how
// to decide by hand (AnnotationRelease on the FederatedObject).

// crdKind is the kind of CustomResourceDefinitions.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// servedKinds records what the host's discoveries listed.
type servedKinds struct {
	mu    sync.Mutex
	kinds map[schema.GroupKind]Kind // listed by the latest discovery
	// crdDeleted are the kinds whose CRD the cache saw being deleted.
	crdDeleted map[schema.GroupKind]bool
}

// note records a discovery's kinds; the kinds of the group versions that
// failed to answer (failedGroups) stay as they were. It returns the kinds
// now served.
func (s *servedKinds) note(found map[schema.GroupKind]Kind, failedGroups []schema.GroupVersion) map[schema.GroupKind]Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	failing := map[string]bool{}
	for _, gv := range failedGroups {
		failing[gv.Group] = true
	}
	served := maps.Clone(found)
	for gk, k := range s.kinds {
		if _, ok := served[gk]; !ok && failing[gk.Group] {
			served[gk] = k
		}
	}
	s.kinds = served
	return served
}

// kind returns the served kind gk.
func (s *servedKinds) kind(gk schema.GroupKind) (Kind, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kinds[gk]
	return k, ok
}

// noteCRD records a CRD being deleted (or deleted), and forgets that
// once a CRD that is not being deleted defines the kind again. Only the
// CRD itself says so: discovery keeps listing a kind all through its
// CRD's termination, and may still list it just after.
func (s *servedKinds) noteCRD(u *unstructured.Unstructured, deleted bool) {
	gk, ok := definedKind(u)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !deleted && u.GetDeletionTimestamp().IsZero() {
		delete(s.crdDeleted, gk) // a CRD defines it (again)
		return
	}
	if s.crdDeleted == nil {
		s.crdDeleted = map[schema.GroupKind]bool{}
	}
	s.crdDeleted[gk] = true
}

// sawCRDDeleted reports whether the cache saw gk's CRD being deleted.
func (s *servedKinds) sawCRDDeleted(gk schema.GroupKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crdDeleted[gk]
}

// definedKind returns the group and kind a CRD defines.
func definedKind(crd *unstructured.Unstructured) (schema.GroupKind, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}, kind != ""
}

// Serves reports whether the host's latest discovery listed gk (or could
// not tell, its group failing to answer), whether or not the cache
// watches it.
func (c *Cache) Serves(gk schema.GroupKind) bool {
	_, ok := c.served.kind(gk)
	return ok
}

// crdState is what the cache knows of the CRDs that define a kind.
type crdState struct {
	found    bool // a CRD defines the kind
	deleting bool // every CRD that defines it is being deleted
	// sawDeleted: the cache saw the kind's CRD being deleted.
	sawDeleted bool
}

// crdOf looks in the cache for the CRDs that define gk (two may, one of
// them refused its names).
func (c *Cache) crdOf(gk schema.GroupKind) (crdState, error) {
	st := crdState{sawDeleted: c.served.sawCRDDeleted(gk)}
	if !c.gatesOpen() {
		return st, ErrNotSynced
	}
	crds, err := c.List(crdKind, "")
	if err != nil {
		return st, err
	}
	st.found, st.deleting = definedBy(crds, gk)
	return st, nil
}

// RemovedWithCRD reports whether the objects of gk went, or are going,
// with its CRD: every CRD that defines it is being deleted, or the cache
// saw one deleted and none defines it now (also before the cache has
// synced). A CRD's cleanup deletes its objects in storage, past admission:
// deletion protection does not hold them.
func (c *Cache) RemovedWithCRD(gk schema.GroupKind) bool {
	crd, err := c.crdOf(gk)
	if err != nil {
		return crd.sawDeleted
	}
	return crd.deleting || (!crd.found && crd.sawDeleted)
}

// RemovedWithCRDNow is RemovedWithCRD that asks the host when the cache
// says no. The cache hears of a CRD and of its kind's objects through
// different watches, so the delete events of the objects its cleanup
// removes can come before the CRD's own deletion is seen. A kind that no
// CRD in the cache defines is never removed with one (no question asked).
// The kind's CRDs that the host no longer holds, or holds being deleted,
// took its objects with them.
func (c *Cache) RemovedWithCRDNow(ctx context.Context, gk schema.GroupKind) (bool, error) {
	if c.RemovedWithCRD(gk) {
		return true, nil
	}
	if !c.gatesOpen() {
		return false, ErrNotSynced
	}
	crds, err := c.List(crdKind, "")
	if err != nil {
		return false, err
	}
	var cached []*unstructured.Unstructured
	for _, u := range crds {
		if defined, ok := definedKind(u); ok && defined == gk {
			cached = append(cached, u)
		}
	}
	res := c.client.Resource(schema.GroupVersionResource{Group: crdKind.Group, Version: "v1", Resource: "customresourcedefinitions"})
	return crdsGone(gk, cached, func(name string) (*unstructured.Unstructured, error) {
		return res.Get(ctx, name, metav1.GetOptions{})
	})
}

// crdsGone reports whether none of the CRDs cached (those the cache knows
// to define gk) still defines gk on the host, as get reads them: each is
// gone, being deleted, replaced by a CRD of the same name created since
// (its objects went with the one deleted), or defines another kind now.
// None cached: gk is not a CRD's kind, so not gone with one.
func crdsGone(gk schema.GroupKind, cached []*unstructured.Unstructured, get func(name string) (*unstructured.Unstructured, error)) (bool, error) {
	if len(cached) == 0 {
		return false, nil
	}
	for _, crd := range cached {
		live, err := get(crd.GetName())
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, fmt.Errorf("read CRD %s: %w", crd.GetName(), err)
		}
		if defined, _ := definedKind(live); defined == gk && live.GetDeletionTimestamp().IsZero() && live.GetUID() == crd.GetUID() {
			return false, nil // it still defines the kind
		}
	}
	return true, nil
}

// definedBy reports whether a CRD of crds defines gk, and whether every
// one that does is being deleted.
func definedBy(crds []*unstructured.Unstructured, gk schema.GroupKind) (found, deleting bool) {
	deleting = true
	for _, u := range crds {
		if defined, ok := definedKind(u); ok && defined == gk {
			found = true
			deleting = deleting && !u.GetDeletionTimestamp().IsZero()
		}
	}
	return found, found && deleting
}

// WaitError says that a question cannot be answered yet, and when to ask
// again.
type WaitError struct {
	// After is when to ask again.
	After time.Duration
	// Err says why.
	Err error
}

func (e *WaitError) Error() string { return e.Err.Error() }

func (e *WaitError) Unwrap() error { return e.Err }

// RetryAfter is when to ask again after err: a WaitError's own time, or
// otherwise.
func RetryAfter(err error, otherwise time.Duration) time.Duration {
	var w *WaitError
	if errors.As(err, &w) && w.After > 0 {
		return w.After
	}
	return otherwise
}

// ReadUnwatched tells what became of the host object ref names, whose kind
// the cache does not watch: the object when it lives, nil when the host
// has removed it (deleted, replaced by a new object of the same name, or
// gone with its kind's CRD). An error means the answer is not known: keep
// what depends on it (a WaitError says when to ask again).
func (c *Cache) ReadUnwatched(ctx context.Context, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	gk := KeyOfReference(ref).GroupKind()
	if c.Serves(gk) {
		live, err := c.ReadLive(ctx, ref)
		switch {
		case err == nil && live.GetUID() != ref.UID, Gone(err):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return live, nil
	}
	crd, err := c.crdOf(gk)
	switch {
	case errors.Is(err, ErrNotSynced):
		return nil, &WaitError{After: c.SyncRetry(Key{Group: crdKind.Group, Kind: crdKind.Kind}), Err: fmt.Errorf("cannot tell yet whether %s was removed: %w", gk, err)}
	case err != nil:
		return nil, fmt.Errorf("cannot tell whether %s was removed: the CustomResourceDefinitions are not in the cache: %w", gk, err)
	}
	return nil, unservedFate(gk, crd)
}

// unservedFate decides whether the objects of gk, a kind the host no
// longer serves, were removed with it (nil) or may still exist (an error
// that says what to do), from what the cache knows of its CRD.
func unservedFate(gk schema.GroupKind, crd crdState) error {
	switch {
	case crd.deleting || (!crd.found && crd.sawDeleted):
		return nil // removed with its CRD
	case crd.found:
		return fmt.Errorf("the host serves no version of %s, but its CustomResourceDefinition is there (no version served?): its objects may still exist: %w", gk, ErrKindNotServed)
	}
	return fmt.Errorf("the host does not serve %s and no CustomResourceDefinition defines it, but Flotilla did not see it removed (its CRD deleted while the controller-manager was down, an aggregated API unregistered, an API group turned off): its objects may still exist; if they are gone for good, annotate the FederatedObject %s=%s (or %s to keep the copies) and delete it: %w",
		gk, v1alpha1.AnnotationRelease, v1alpha1.ReleaseDelete, v1alpha1.ReleaseOrphan, ErrKindNotServed)
}
