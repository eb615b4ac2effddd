package pull

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
)

// TestTakenIntentNameIsRefused: an intent named as an object's intent
// would be but recorded for another object (their names' hashes collide)
// is not that object's: the object has no intent, no copy and nothing to
// suspend, and applying it fails, naming the holder, rather than
// overwrite the holder's intent. (A collision cannot be made in a test;
// the holder's intent is planted under the victim's intent name.)
func TestTakenIntentNameIsRefused(t *testing.T) {
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ns := "flotilla-cluster-a"
	holder := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flotilla.io/v1alpha1", "kind": "ClusterIntent",
		"metadata": map[string]any{"name": IntentName(deploy.GroupResource(), "shop", "web"), "namespace": ns, "resourceVersion": "1"},
		"spec": map[string]any{
			"resource": map[string]any{"group": "apps", "version": "v1", "resource": "deployments"},
			"object":   map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "other", "namespace": "evil"}},
			"hash":     "h1",
		},
		"status": map[string]any{"observedGeneration": int64(1), "outcome": "Applied"},
	}}
	s := sessionWith(t, ns, holder)

	if in, synced := s.lookup(deploy.GroupResource(), "shop", "web"); !synced || in != nil {
		t.Errorf("lookup of shop/web = %v, %v; want no intent, synced", in, synced)
	}
	if obj, state := s.ManagedObject(deploy, "shop", "web"); obj != nil || state != member.CacheSynced {
		t.Errorf("ManagedObject(shop/web) = %v, %v; want none", obj, state)
	}
	if err := s.Suspend(context.Background(), deploy, "shop", "web"); err != nil {
		t.Errorf("Suspend(shop/web): %v; want nothing to suspend", err)
	}
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("apps/v1")
	web.SetKind("Deployment")
	web.SetNamespace("shop")
	web.SetName("web")
	_, err := s.Apply(context.Background(), deploy, &dispatch.Intent{Object: web, Hash: "h2"}, dispatch.Options{})
	if !errors.Is(err, errIntentNameTaken) {
		t.Fatalf("Apply(shop/web) = %v; want errIntentNameTaken", err)
	}
	const want = "intent name taken: the intent name flotilla-cluster-a/web.shop.deployments-"
	if msg := err.Error(); len(msg) < len(want) || msg[:len(want)] != want {
		t.Errorf("Apply(shop/web) error %q; want it to start %q", msg, want)
	}
}

// sessionWith returns a Session whose intent cache has synced with objs
// (it has no client: whatever would write fails).
func sessionWith(t *testing.T, namespace string, objs ...*unstructured.Unstructured) *Session {
	t.Helper()
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	list.SetResourceVersion("1")
	for _, o := range objs {
		list.Items = append(list.Items, *o)
	}
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopy(), nil },
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil {
				// A streaming list: refused, so the reflector lists.
				return nil, apierrors.NewBadRequest("no streaming lists here")
			}
			return watch.NewFake(), nil
		},
	}, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{byObject: indexObject}})
	_ = inf.SetTransform(slim)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if !cache.WaitForCacheSync(wait.Done(), inf.HasSynced) {
		t.Fatal("the intent cache did not sync in 10s")
	}
	return &Session{namespace: namespace, intents: inf, started: time.Now()}
}
