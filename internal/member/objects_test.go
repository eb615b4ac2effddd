package member

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/poll"
)

var errNotStarted = errors.New("the cache has not started")

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// listingSession is a session whose member cache of ConfigMaps lists one
// managed ConfigMap, but only once release is closed.
func listingSession(t *testing.T, release <-chan struct{}) *Session {
	t.Helper()
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("ns")
	cm.SetName("web")
	cm.SetLabels(map[string]string{v1alpha1.LabelManaged: "true"})
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"}, cm)
	// The fake watch cannot stream a list (no bookmark ends it): refuse
	// it, as an older apiserver does, so the informer lists.
	client.PrependWatchReactor("configmaps", func(a clienttesting.Action) (bool, watch.Interface, error) {
		if w, ok := a.(clienttesting.WatchActionImpl); ok && w.ListOptions.SendInitialEvents != nil {
			return true, nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		return false, nil, nil
	})
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil // the tracker answers
	})
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{Name: "member-1", ctx: ctx, cancel: cancel,
		objects: &objectCaches{client: client, verified: dispatch.NewVerified(),
			m: map[schema.GroupVersionResource]cache.SharedIndexInformer{}, started: map[schema.GroupVersionResource]time.Time{}}}
	t.Cleanup(func() {
		s.objects.stop()
		cancel()
		s.wg.Wait()
	})
	return s
}

// TestWaitManagedReturnsOnceSynced: a reconciler that meets a listing
// cache waits for it and then finds the copy.
func TestWaitManagedReturnsOnceSynced(t *testing.T) {
	release := make(chan struct{})
	s := listingSession(t, release)
	if _, state := s.ManagedObject(configMaps, "ns", "web"); state != CacheSyncing {
		t.Fatalf("state before the list answers = %v, want CacheSyncing", state)
	}
	done := make(chan struct{})
	go func() {
		s.WaitManaged(context.Background(), configMaps)
		close(done)
	}()
	close(release)
	select {
	case <-done:
	case <-time.After(SyncWait + 5*time.Second):
		t.Fatal("WaitManaged did not return after the cache synced")
	}
	obj, state := s.ManagedObject(configMaps, "ns", "web")
	if state != CacheSynced || obj == nil {
		t.Fatalf("after WaitManaged: state %v, object %v; want CacheSynced and the copy", state, obj)
	}
}

// TestWaitManagedEndsWithContext: a list that never answers holds a
// worker no longer than its context.
func TestWaitManagedEndsWithContext(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := listingSession(t, release)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.WaitManaged(ctx, configMaps)
		close(done)
	}()
	// The informer exists once WaitManaged has started it.
	if err := poll.Until(context.Background(), 5*time.Second, func(context.Context) error {
		if _, ok := s.PeekManagedObject(configMaps, "ns", "web"); ok {
			t.Fatal("the cache synced although the list never answered")
		}
		s.objects.mu.Lock()
		defer s.objects.mu.Unlock()
		if _, ok := s.objects.m[configMaps]; !ok {
			return errNotStarted
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WaitManaged did not return when its context ended")
	}
	if _, state := s.ManagedObject(configMaps, "ns", "web"); state != CacheSyncing {
		t.Fatalf("state = %v, want CacheSyncing", state)
	}
}

// countingMapper answers Deployments and counts the questions.
type countingMapper struct {
	meta.ResettableRESTMapper
	asked, resets int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if gk.Kind != "Deployment" {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}, nil
}

func (m *countingMapper) Reset() { m.resets++ }

// TestThrottledMapperRemembers: a mapping found is remembered until a
// Reset; a kind not found is asked again.
func TestThrottledMapperRemembers(t *testing.T) {
	inner := &countingMapper{}
	m := &throttledMapper{ResettableRESTMapper: inner}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	steps := []struct {
		name      string
		do        func() error
		wantAsked int
	}{
		{"first question asks the member", func() error { _, err := m.RESTMapping(deployment, "v1"); return err }, 1},
		{"same question is remembered", func() error { _, err := m.RESTMapping(deployment, "v1"); return err }, 1},
		{"another version asks", func() error { _, err := m.RESTMapping(deployment, "v1beta1"); return err }, 2},
		{"no version asks every time", func() error { _, err := m.RESTMapping(deployment); return err }, 3},
		{"unknown kind asks", func() error { _, err := m.RESTMapping(widget, "v1"); return ignoreNoMatch(err) }, 4},
		{"unknown kind asks again", func() error { _, err := m.RESTMapping(widget, "v1"); return ignoreNoMatch(err) }, 5},
		{"reset forgets", func() error { m.Reset(); _, err := m.RESTMapping(deployment, "v1"); return err }, 6},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if inner.asked != s.wantAsked {
			t.Fatalf("%s: the member was asked %d times, want %d", s.name, inner.asked, s.wantAsked)
		}
	}
	if inner.resets != 1 {
		t.Fatalf("resets = %d, want 1", inner.resets)
	}
}

func ignoreNoMatch(err error) error {
	if meta.IsNoMatchError(err) {
		return nil
	}
	return err
}
