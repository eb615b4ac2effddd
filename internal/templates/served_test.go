package templates

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUnservedFate(t *testing.T) {
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	const grace = time.Minute
	tests := []struct {
		name     string
		gk       schema.GroupKind
		crd      crdState
		unserved time.Duration
		removed  bool
		wait     time.Duration // of a WaitError
	}{
		{name: "CRD being deleted", gk: gizmo, crd: crdState{found: true, deleting: true}, removed: true},
		{name: "CRD seen deleted", gk: gizmo, crd: crdState{sawDeleted: true}, removed: true},
		{name: "CRD there, no version served", gk: gizmo, crd: crdState{found: true}, unserved: time.Hour},
		{name: "CRD there after one seen deleted (a new one)", gk: gizmo, crd: crdState{found: true, sawDeleted: true}, unserved: time.Hour},
		{name: "Kubernetes kind turned off", gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, unserved: time.Hour},
		{name: "core kind", gk: schema.GroupKind{Kind: "ConfigMap"}, unserved: time.Hour},
		{name: "no CRD, just unserved (an API registered again?)", gk: gizmo, unserved: 20 * time.Second, wait: 40 * time.Second},
		{name: "no CRD, unserved long enough", gk: gizmo, unserved: grace, removed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := unservedFate(tc.gk, tc.crd, tc.unserved, grace)
			if tc.removed {
				if err != nil {
					t.Fatalf("%v, want removed", err)
				}
				return
			}
			if !errors.Is(err, ErrKindNotServed) {
				t.Fatalf("%v, want ErrKindNotServed", err)
			}
			var w *WaitError
			if got := errors.As(err, &w); got != (tc.wait > 0) || (got && w.After != tc.wait) {
				t.Errorf("wait %v (%v), want %v", w, got, tc.wait)
			}
			if got := RetryAfter(err, time.Hour); tc.wait > 0 && got != tc.wait || tc.wait == 0 && got != time.Hour {
				t.Errorf("RetryAfter = %s", got)
			}
		})
	}
}

func TestServedKinds(t *testing.T) {
	var s servedKinds
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	widget := schema.GroupKind{Group: "widgets.example.com", Kind: "Widget"}
	kinds := map[schema.GroupKind]Kind{
		gizmo:  {GVK: gizmo.WithVersion("v1")},
		widget: {GVK: widget.WithVersion("v2")},
	}
	var none []schema.GroupVersion
	s.note(kinds, none, t0)
	if k, ok := s.kind(widget); !ok || k.GVK.Version != "v2" {
		t.Fatalf("widget: %v %v", k, ok)
	}
	// A discovery where widgets' group failed to answer keeps Widget;
	// Gizmo is no longer listed.
	// ... and one where a group without any kind listed yet fails too.
	other := schema.GroupKind{Group: "other.example.com", Kind: "Other"}
	failing := []schema.GroupVersion{widget.WithVersion("v2").GroupVersion(), {Group: other.Group, Version: "v1"}}
	got := s.note(map[schema.GroupKind]Kind{}, failing, t0.Add(time.Minute))
	if _, ok := got[widget]; !ok {
		t.Error("a kind of a group that failed to answer was dropped")
	}
	if _, ok := got[gizmo]; ok {
		t.Error("a kind no longer listed is still served")
	}
	if d, failing := s.unservedFor(gizmo, t0.Add(2*time.Minute)); d != 2*time.Minute || failing {
		t.Errorf("gizmo unserved for %s (group failing %v), want 2m, false", d, failing)
	}
	if d, _ := s.unservedFor(schema.GroupKind{Group: "never.example.com", Kind: "X"}, t0.Add(2*time.Minute)); d != 2*time.Minute {
		t.Errorf("a kind never seen: unserved for %s, want since the first discovery (2m)", d)
	}
	if _, failing := s.unservedFor(other, t0.Add(2*time.Minute)); !failing {
		t.Error("a kind of a group that fails to answer counts as unserved")
	}
	// The group answers again, without the kind: its clock starts when
	// the group last failed.
	s.note(map[schema.GroupKind]Kind{}, none, t0.Add(3*time.Minute))
	if d, failing := s.unservedFor(other, t0.Add(4*time.Minute)); d != 3*time.Minute || failing {
		t.Errorf("other unserved for %s (failing %v), want 3m since its group last failed", d, failing)
	}

	crd := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": "example.com", "names": map[string]any{"kind": "Gizmo"}}}}
	s.noteCRD(crd, false)
	if s.sawCRDDeleted(gizmo) {
		t.Error("a CRD not being deleted counted as deleted")
	}
	s.noteCRD(crd, true)
	if !s.sawCRDDeleted(gizmo) {
		t.Error("a deleted CRD was not noted")
	}
	s.note(kinds, none, t0.Add(5*time.Minute))
	if s.sawCRDDeleted(gizmo) {
		t.Error("a kind served again still counts its CRD as deleted")
	}
}

func TestPathNotFound(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "gizmos"}
	tests := []struct {
		name string
		err  error
		path bool
		gone bool
	}{
		{name: "missing object", err: apierrors.NewNotFound(gr, "a"), gone: true},
		{name: "unserved path", err: apierrors.NewGenericServerResponse(404, "get", gr, "a", "404 page not found", 0, true), path: true},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "a", errors.New("no"))},
		{name: "not served, wrapped", err: fmt.Errorf("read: %w (%v)", ErrKindNotServed, apierrors.NewNotFound(gr, "a"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pathNotFound(tc.err); got != tc.path {
				t.Errorf("pathNotFound = %v, want %v", got, tc.path)
			}
			if got := Gone(tc.err); got != tc.gone {
				t.Errorf("Gone = %v, want %v", got, tc.gone)
			}
		})
	}
}
