package templates

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// An object whose kind the cache does not watch has no delete event to
// tell its fate. When its kind is still served (the controller-manager may
// not watch it), the host is asked about the object. When the host no
// longer serves the kind at all, the objects went with it only if its CRD
// was deleted: a CRD that stops serving every version (served: false)
// keeps its objects, an aggregated API being registered again comes back
// with them, and a kind Kubernetes itself serves is never removed that way.
// So a kind no longer served counts as removed with its objects when its
// CRD is being deleted or was seen deleted, or else only once no CRD
// defines it and the host has not served it for unservedGrace (two
// discoveries at least): a controller-manager that restarts after the
// deletion has no other evidence.

// crdKind is the kind of CustomResourceDefinitions.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// servedKinds records what the host's discoveries listed.
type servedKinds struct {
	mu    sync.Mutex
	kinds map[schema.GroupKind]Kind // listed by the latest discovery
	// last is when each kind was last listed; first is the first
	// discovery's time (the clock of a kind never seen served).
	last  map[schema.GroupKind]time.Time
	first time.Time
	// failing are the groups whose discovery failed the latest time, and
	// failed when each group last failed: while its group does not
	// answer, a kind's absence says nothing.
	failing map[string]bool
	failed  map[string]time.Time
	// crdDeleted are the kinds whose CRD the cache saw being deleted.
	crdDeleted map[schema.GroupKind]bool
}

// note records a discovery's kinds, and the group versions that failed to
// answer (failedGroups); the kinds of those groups stay as they were. It
// returns the kinds now served.
func (s *servedKinds) note(found map[schema.GroupKind]Kind, failedGroups []schema.GroupVersion, now time.Time) map[schema.GroupKind]Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.first, s.failed = map[schema.GroupKind]time.Time{}, now, map[string]time.Time{}
	}
	s.failing = map[string]bool{}
	for _, gv := range failedGroups {
		s.failing[gv.Group] = true
		s.failed[gv.Group] = now
	}
	served := maps.Clone(found)
	for gk, k := range s.kinds {
		if _, ok := served[gk]; !ok && s.failing[gk.Group] {
			served[gk] = k
		}
	}
	for gk := range served {
		s.last[gk] = now
		delete(s.crdDeleted, gk) // served again: a new CRD
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

// unservedFor returns how long gk has not been served, as far as this
// process has seen (since its first discovery for a kind it never saw, or
// since its group last failed to answer), and whether its group fails to
// answer now (then its absence says nothing).
func (s *servedKinds) unservedFor(gk schema.GroupKind, now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	since, ok := s.last[gk]
	if !ok {
		since = s.first
	}
	if f := s.failed[gk.Group]; f.After(since) {
		since = f
	}
	return now.Sub(since), s.failing[gk.Group]
}

// noteCRD records a CRD being deleted (or deleted).
func (s *servedKinds) noteCRD(u *unstructured.Unstructured, deleted bool) {
	if !deleted && u.GetDeletionTimestamp().IsZero() {
		return
	}
	gk, ok := definedKind(u)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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

// Serves reports whether the host's latest discovery listed gk, whether
// or not the cache watches it.
func (c *Cache) Serves(gk schema.GroupKind) bool {
	_, ok := c.served.kind(gk)
	return ok
}

// unservedGrace is how long a kind no CRD defines must have gone
// unserved before its objects count as removed: two discoveries.
func (c *Cache) unservedGrace() time.Duration { return 2 * c.interval }

// crdOf looks in the cache for the CRD that defines gk: whether there is
// one and whether it is being deleted.
func (c *Cache) crdOf(gk schema.GroupKind) (found, deleting bool, err error) {
	if !c.gatesOpen() {
		return false, false, ErrNotSynced
	}
	crds, err := c.List(crdKind, "")
	if err != nil {
		return false, false, err
	}
	for _, u := range crds {
		if defined, ok := definedKind(u); ok && defined == gk {
			return true, !u.GetDeletionTimestamp().IsZero(), nil
		}
	}
	return false, false, nil
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
// gone with its kind's CRD). An error means the answer is not known yet:
// keep what depends on it (a WaitError says when to ask again).
func (c *Cache) ReadUnwatched(ctx context.Context, reader client.Reader, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	gk := KeyOfReference(ref).GroupKind()
	if c.Serves(gk) {
		live, err := c.ReadLive(ctx, reader, ref)
		switch {
		case err == nil && live.GetUID() != ref.UID, Gone(err):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return live, nil
	}
	found, deleting, err := c.crdOf(gk)
	switch {
	case errors.Is(err, ErrNotSynced):
		return nil, &WaitError{After: time.Second, Err: fmt.Errorf("cannot tell yet whether %s was removed: %w", gk, err)}
	case err != nil:
		return nil, fmt.Errorf("cannot tell whether %s was removed: the CustomResourceDefinitions are not in the cache: %w", gk, err)
	}
	unserved, failing := c.served.unservedFor(gk, time.Now())
	if failing {
		return nil, &WaitError{After: c.interval, Err: fmt.Errorf("the host's discovery of group %q fails, so whether it serves %s is not known: %w", gk.Group, gk, ErrKindNotServed)}
	}
	return nil, unservedFate(gk, crdState{found: found, deleting: deleting, sawDeleted: c.served.sawCRDDeleted(gk)}, unserved, c.unservedGrace())
}

// crdState is what the cache knows of the CRD of a kind.
type crdState struct {
	found, deleting bool // a CRD defines the kind; it is being deleted
	sawDeleted      bool // the cache saw the kind's CRD being deleted
}

// unservedFate decides whether the objects of gk, a kind the host no
// longer serves, were removed with it (nil) or may still exist (an error;
// a WaitError when time may tell), given its CRD and how long the kind
// has gone unserved.
func unservedFate(gk schema.GroupKind, crd crdState, unserved, grace time.Duration) error {
	switch {
	case crd.deleting || (!crd.found && crd.sawDeleted):
		return nil // removed with its CRD
	case crd.found:
		return fmt.Errorf("the host serves no version of %s, but its CustomResourceDefinition is there (no version served?): its objects may still exist: %w", gk, ErrKindNotServed)
	case gk.Group == "" || clientgoscheme.Scheme.IsGroupRegistered(gk.Group):
		return fmt.Errorf("the host does not serve %s, a Kubernetes kind (an API group turned off?): its objects may still exist: %w", gk, ErrKindNotServed)
	case unserved < grace:
		return &WaitError{After: grace - unserved, Err: fmt.Errorf("the host has not served %s for %s, and no CustomResourceDefinition defines it: its objects count as removed once it has not been served for %s (an API being registered again comes back): %w",
			gk, unserved.Round(time.Second), grace, ErrKindNotServed)}
	}
	return nil // no CRD, no API: removed with them
}
