package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestMetadataWatchListThroughTheGateway: a metadata-only client (client-go's
// metadata informers, controller-runtime's metadata watches) watches
// member pods with the initial objects and bookmarks, as client-go's
// watch-list does. Every event decodes as partial object metadata, the
// bookmark that ends the initial objects included; a bookmark of the
// kind's own shape would end the watch with a decoding error and make the
// informer relist.
func TestMetadataWatchListThroughTheGateway(t *testing.T) {
	joinMembers(t)
	gw := startGateway(t)
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "first", nil)
	makePod(t, env.Members[1].Client, ns, "second", nil)
	cfg := rest.CopyConfig(gw)
	cfg.BearerToken = env.Host.Config.BearerToken
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := md.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns)
	testenv.Eventually(t, 30*time.Second, "both pods listed", func(ctx context.Context) error {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) != 2 {
			return fmt.Errorf("%d pods", len(l.Items))
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := pods.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	added := 0
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %d objects, before the bookmark that ends the initial ones", added)
			}
			switch ev.Type {
			case watch.Added:
				if _, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok {
					t.Fatalf("ADDED %T, want PartialObjectMetadata", ev.Object)
				}
				added++
			case watch.Bookmark:
				p, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok {
					t.Fatalf("BOOKMARK %T, want PartialObjectMetadata", ev.Object)
				}
				if p.Annotations[metav1.InitialEventsAnnotationKey] != "true" || p.ResourceVersion == "" {
					continue // a periodic bookmark
				}
				if added != 2 {
					t.Errorf("%d initial objects before the bookmark that ends them, want 2", added)
				}
				return
			default:
				t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatalf("no bookmark ending the initial objects after %d of them", added)
		}
	}
}
