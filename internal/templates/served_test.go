package templates

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUnservedFate(t *testing.T) {
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	tests := []struct {
		name    string
		crd     crdState
		removed bool
		hint    string // in the error of an object kept
	}{
		{name: "CRD being deleted", crd: crdState{found: true, deleting: true}, removed: true},
		{name: "CRD seen deleted", crd: crdState{sawDeleted: true}, removed: true},
		{name: "CRD there, no version served", crd: crdState{found: true}, hint: "no version served"},
		{name: "a new CRD after one seen deleted", crd: crdState{found: true, sawDeleted: true}, hint: "no version served"},
		{name: "no CRD, none seen deleted (down meanwhile, or an aggregated API)", hint: "flotilla.io/release=delete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := unservedFate(gizmo, tc.crd)
			if tc.removed {
				if err != nil {
					t.Fatalf("%v, want removed", err)
				}
				return
			}
			if !errors.Is(err, ErrKindNotServed) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("%v, want ErrKindNotServed saying %q", err, tc.hint)
			}
			if got := RetryAfter(err, time.Hour); got != time.Hour {
				t.Errorf("RetryAfter = %s, want the caller's", got)
			}
		})
	}
	if got := RetryAfter(&WaitError{After: time.Second, Err: ErrNotSynced}, time.Hour); got != time.Second {
		t.Errorf("RetryAfter of a WaitError = %s, want its own", got)
	}
}

func TestServedKinds(t *testing.T) {
	var s servedKinds
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	widget := schema.GroupKind{Group: "widgets.example.com", Kind: "Widget"}
	kinds := map[schema.GroupKind]Kind{
		gizmo:  {GVK: gizmo.WithVersion("v1")},
		widget: {GVK: widget.WithVersion("v2")},
	}
	s.note(kinds, nil)
	if k, ok := s.kind(widget); !ok || k.GVK.Version != "v2" {
		t.Fatalf("widget: %v %v", k, ok)
	}
	// A discovery where widgets' group failed to answer keeps Widget;
	// Gizmo is no longer listed.
	got := s.note(map[schema.GroupKind]Kind{}, []schema.GroupVersion{{Group: widget.Group, Version: "v2"}})
	if _, ok := got[widget]; !ok {
		t.Error("a kind of a group that failed to answer was dropped")
	}
	if _, ok := got[gizmo]; ok {
		t.Error("a kind no longer listed is still served")
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
	// Kept only because its group fails to answer: the evidence stays.
	s.noteCRD(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": widget.Group, "names": map[string]any{"kind": "Widget"}}}}, true)
	s.note(map[schema.GroupKind]Kind{}, []schema.GroupVersion{{Group: widget.Group, Version: "v2"}})
	if !s.sawCRDDeleted(widget) {
		t.Error("a kind kept for its failing group lost its CRD's deletion")
	}
	// Discovery lists a kind all through its CRD's termination, and may
	// just after: that proves nothing. A CRD that defines it again does.
	s.note(kinds, nil)
	if !s.sawCRDDeleted(gizmo) {
		t.Error("a kind discovery still lists lost its CRD's deletion")
	}
	s.noteCRD(crd, false)
	if s.sawCRDDeleted(gizmo) {
		t.Error("a kind a new CRD defines still counts its CRD as deleted")
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

func TestDefinedBy(t *testing.T) {
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	crd := func(name, group, kind string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": group, "names": map[string]any{"kind": kind}}}}
		u.SetName(name)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	other := crd("widgets.example.com", "example.com", "Widget", true)
	for _, tc := range []struct {
		name            string
		crds            []*unstructured.Unstructured
		found, deleting bool
	}{
		{name: "none", crds: []*unstructured.Unstructured{other}},
		{name: "one", crds: []*unstructured.Unstructured{other, crd("gizmos.example.com", "example.com", "Gizmo", false)}, found: true},
		{name: "one being deleted", crds: []*unstructured.Unstructured{crd("gizmos.example.com", "example.com", "Gizmo", true)}, found: true, deleting: true},
		{name: "two, one being deleted", crds: []*unstructured.Unstructured{
			crd("gizmos.example.com", "example.com", "Gizmo", true), crd("gizmoes.example.com", "example.com", "Gizmo", false),
		}, found: true},
	} {
		if found, deleting := definedBy(tc.crds, gizmo); found != tc.found || deleting != tc.deleting {
			t.Errorf("%s: found %v deleting %v, want %v %v", tc.name, found, deleting, tc.found, tc.deleting)
		}
	}
}

func TestCRDsGone(t *testing.T) {
	gizmo := schema.GroupKind{Group: "example.com", Kind: "Gizmo"}
	crd := func(kind string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"group": "example.com", "names": map[string]any{"kind": kind}},
		}}
		u.SetUID("uid-1")
		if deleting {
			u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return u
	}
	recreated := crd("Gizmo", false)
	recreated.SetUID("uid-2")
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "x")
	tests := []struct {
		name    string
		names   []string
		host    map[string]*unstructured.Unstructured // nil entry: not found
		err     error
		gone    bool
		wantErr bool
	}{
		{name: "not a CRD's kind", gone: false},
		{name: "the CRD lives", names: []string{"gizmos.example.com"}, host: map[string]*unstructured.Unstructured{"gizmos.example.com": crd("Gizmo", false)}},
		{name: "the CRD is being deleted (the cache has not seen it yet)", names: []string{"gizmos.example.com"}, host: map[string]*unstructured.Unstructured{"gizmos.example.com": crd("Gizmo", true)}, gone: true},
		{name: "the CRD is gone", names: []string{"gizmos.example.com"}, host: map[string]*unstructured.Unstructured{"gizmos.example.com": nil}, gone: true},
		{name: "a CRD of that name defines another kind now", names: []string{"gizmos.example.com"}, host: map[string]*unstructured.Unstructured{"gizmos.example.com": crd("Widget", false)}, gone: true},
		{name: "the CRD deleted and created again (the cache has seen neither)", names: []string{"gizmos.example.com"}, host: map[string]*unstructured.Unstructured{"gizmos.example.com": recreated}, gone: true},
		{name: "one of two CRDs still defines it", names: []string{"a.example.com", "b.example.com"}, host: map[string]*unstructured.Unstructured{"a.example.com": nil, "b.example.com": crd("Gizmo", false)}},
		{name: "the host cannot be asked", names: []string{"gizmos.example.com"}, err: errors.New("connection refused"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cached []*unstructured.Unstructured
			for _, n := range tc.names {
				u := crd("Gizmo", false)
				u.SetName(n)
				cached = append(cached, u)
			}
			gone, err := crdsGone(gizmo, cached, func(name string) (*unstructured.Unstructured, error) {
				if tc.err != nil {
					return nil, tc.err
				}
				if u := tc.host[name]; u != nil {
					return u, nil
				}
				return nil, notFound
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if gone != tc.gone {
				t.Fatalf("gone %v, want %v", gone, tc.gone)
			}
		})
	}
}
