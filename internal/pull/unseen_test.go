package pull

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// TestDeleteFindsAnIntentTheCacheHasNotSeen: an intent the session
// created a moment ago, not yet in its cache, is deleted when the object
// is (not taken for absent); once it is gone, or once the cache sees it,
// the session forgets it. The intent cache is a real informer; the hub is
// a fake client (this tests the bookkeeping; internal/agent tests the
// whole path against real apiservers).
func TestDeleteFindsAnIntentTheCacheHasNotSeen(t *testing.T) {
	s, hub, obj, ci := unseenFixture(t)
	ns, deployment, ctx := s.namespace, obj.GroupVersionKind(), context.Background()

	if out, err := s.Delete(ctx, deployment, "shop", "web"); out != dispatch.Absent || err != nil {
		t.Fatalf("Delete of an object the session created no intent for = %q, %v; want Absent", out, err)
	}
	s.created(obj, ci)
	if s.unseen.len() != 1 {
		t.Fatalf("after created: %d intents remembered, want 1", s.unseen.len())
	}
	if _, err := s.Delete(ctx, deployment, "shop", "web"); !errors.Is(err, member.ErrAwaitingAgent) {
		t.Fatalf("Delete of an object whose intent the cache has not seen: %v, want ErrAwaitingAgent", err)
	}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(ci), &v1alpha1.ClusterIntent{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the intent after Delete: %v, want it deleted", err)
	}
	if out, err := s.Delete(ctx, deployment, "shop", "web"); out != dispatch.Absent || err != nil {
		t.Fatalf("Delete once the intent is gone = %q, %v; want Absent", out, err)
	}
	if s.unseen.len() != 0 {
		t.Errorf("after the intent is gone: %d intents remembered, want 0", s.unseen.len())
	}

	// The cache sees the intent: the session forgets it; an intent of the
	// same object with another UID is not the one remembered.
	s.created(obj, ci)
	seen := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flotilla.io/v1alpha1", "kind": "ClusterIntent",
		"metadata": map[string]any{"name": ci.Name, "namespace": ns, "uid": "u2"},
		"spec":     map[string]any{"object": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}},
	}}
	s.seen(seen)
	if s.unseen.len() != 1 {
		t.Errorf("after the cache saw another intent of the object: %d remembered, want 1", s.unseen.len())
	}
	seen.SetUID(ci.UID)
	s.seen(seen)
	if s.unseen.len() != 0 {
		t.Errorf("after the cache saw the intent: %d remembered, want 0", s.unseen.len())
	}

	// Created while the cache already holds it: nothing to remember.
	if err := s.intents.GetIndexer().Add(seen); err != nil {
		t.Fatal(err)
	}
	s.created(obj, ci)
	if s.unseen.len() != 0 {
		t.Errorf("created after the cache has it: %d remembered, want 0", s.unseen.len())
	}
}

// A create that failed without saying the intent is not there (a timeout
// after the hub stored it, AlreadyExists) is remembered by name: a delete
// of the object deletes the intent by name, and the cache seeing any
// intent of the object forgets it.
func TestDeleteFindsAnIntentWhoseCreateTimedOut(t *testing.T) {
	s, hub, obj, stored := unseenFixture(t)
	ns, deployment, ctx := s.namespace, obj.GroupVersionKind(), context.Background()

	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTimeoutError("the write may have happened", 1), true},
		{apierrors.NewAlreadyExists(v1alpha1.GroupVersion.WithResource("clusterintents").GroupResource(), stored.Name), true},
		{errors.New("connection reset by peer"), true},
		{apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("ClusterIntent").GroupKind(), stored.Name, nil), false},
		{apierrors.NewForbidden(v1alpha1.GroupVersion.WithResource("clusterintents").GroupResource(), stored.Name, errors.New("no")), false},
	} {
		if got := mayExist(tc.err); got != tc.want {
			t.Errorf("mayExist(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}

	s.created(obj, &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Name: stored.Name}})
	if _, err := s.Delete(ctx, deployment, "shop", "web"); !errors.Is(err, member.ErrAwaitingAgent) {
		t.Fatalf("Delete of an object whose create timed out: %v, want ErrAwaitingAgent", err)
	}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(stored), &v1alpha1.ClusterIntent{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the intent after Delete: %v, want it deleted", err)
	}
	if out, err := s.Delete(ctx, deployment, "shop", "web"); out != dispatch.Absent || err != nil || s.unseen.len() != 0 {
		t.Fatalf("Delete once the intent is gone = %q, %v with %d remembered; want Absent and none", out, err, s.unseen.len())
	}

	s.created(obj, &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Name: stored.Name}})
	s.seen(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flotilla.io/v1alpha1", "kind": "ClusterIntent",
		"metadata": map[string]any{"name": stored.Name, "namespace": ns, "uid": "u9"},
		"spec":     map[string]any{"object": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}},
	}})
	if s.unseen.len() != 0 {
		t.Errorf("after the cache saw an intent of the object: %d remembered, want 0", s.unseen.len())
	}
}

// unseenFixture is a session of cluster "a" whose hub (a fake client)
// holds one intent, and the Deployment shop/web the intent is for.
func unseenFixture(t *testing.T) (*Session, client.Client, *unstructured.Unstructured, *v1alpha1.ClusterIntent) {
	t.Helper()
	ns := "flotilla-cluster-a"
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	obj.SetNamespace("shop")
	obj.SetName("web")
	ci := &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web.shop.deployments-x", UID: types.UID("u1")}}
	hub := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ci.DeepCopy()).Build()
	s := sessionWith(t, ns)
	s.cfg.Client = hub
	return s, hub, obj, ci
}

// len returns how many intents are remembered.
func (u *unseen) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}

// TestDeleteMarksTheIntent: the hub marks an intent for its copy's
// deletion before deleting it (the agent deletes a copy only then), also
// an intent someone else is deleting; an Apply over a live intent that
// kept a mark (the delete after it failed) writes it afresh without it.
func TestDeleteMarksTheIntent(t *testing.T) {
	s, hub, obj, ci := unseenFixture(t)
	ctx := context.Background()
	held := ci.DeepCopy()
	held.Finalizers = []string{v1alpha1.FinalizerAgent}
	held.ResourceVersion = ""
	if err := hub.Delete(ctx, ci); err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	s.created(obj, held)
	if _, err := s.Delete(ctx, obj.GroupVersionKind(), "shop", "web"); !errors.Is(err, member.ErrAwaitingAgent) {
		t.Fatalf("Delete: %v, want ErrAwaitingAgent", err)
	}
	got := &v1alpha1.ClusterIntent{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(held), got); err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp.IsZero() || !releaseMarked(got.Annotations) {
		t.Fatalf("the intent after Delete: deleting since %v, annotations %v; want it deleted and marked %s=%s",
			got.DeletionTimestamp, got.Annotations, v1alpha1.AnnotationRelease, v1alpha1.ReleaseDelete)
	}
}

// TestApplyDropsAStaleMark: a live intent that kept the mark for its
// copy's deletion (the delete after the mark failed) is written afresh,
// without it, by the next Apply of the same object: a deletion by hand
// later must keep the copy.
func TestApplyDropsAStaleMark(t *testing.T) {
	s, hub, obj, _ := unseenFixture(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	in, err := dispatch.Prepare(obj)
	if err != nil {
		t.Fatal(err)
	}
	name := IntentName(gvr.GroupResource(), "shop", "web")
	stored := &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name,
		Finalizers:  []string{v1alpha1.FinalizerAgent},
		Annotations: map[string]string{v1alpha1.AnnotationRelease: v1alpha1.ReleaseDelete}}}
	if err := hub.Create(ctx, stored); err != nil {
		t.Fatal(err)
	}
	cached := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flotilla.io/v1alpha1", "kind": "ClusterIntent",
		"metadata": map[string]any{"name": name, "namespace": s.namespace, "resourceVersion": stored.ResourceVersion,
			"finalizers":  []any{v1alpha1.FinalizerAgent},
			"annotations": map[string]any{v1alpha1.AnnotationRelease: v1alpha1.ReleaseDelete}},
		"spec": map[string]any{"hash": in.Hash,
			"resource": map[string]any{"group": "apps", "version": "v1", "resource": "deployments"},
			"object":   map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}},
	}}
	if err := s.intents.GetIndexer().Add(cached); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, gvr, in, dispatch.Options{}); !errors.Is(err, member.ErrAwaitingAgent) {
		t.Fatalf("Apply over a marked intent: %v, want ErrAwaitingAgent (written afresh)", err)
	}
	got := &v1alpha1.ClusterIntent{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if releaseMarked(got.Annotations) || got.Spec.Hash != in.Hash {
		t.Errorf("the intent after Apply: annotations %v, hash %q; want no mark and hash %q", got.Annotations, got.Spec.Hash, in.Hash)
	}
}
