package templates

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// SecretKind is the kind the cache watches only on demand: reading every
// Secret of the host is not something to do just in case.
var SecretKind = schema.GroupKind{Kind: "Secret"}

// Wanted reports whether an on-demand kind is needed now, and why (for the
// logs).
type Wanted func(ctx context.Context) (bool, string, error)

// access decides which discovered kinds the cache watches: only those the
// controller-manager may list and watch cluster-wide (asked with
// SelfSubjectAccessReviews), and on-demand kinds only while wanted.
type access struct {
	authz authorizationclient.AuthorizationV1Interface

	mu       sync.Mutex
	onDemand map[schema.GroupKind]Wanted
	skipped  map[schema.GroupKind]string // the reason last logged, per kind not watched
	idle     map[schema.GroupKind]int    // discoveries in a row a watched on-demand kind was not wanted
}

// idleDiscoveries is how many discoveries in a row a watched on-demand kind
// stays watched while not wanted, before the cache stops watching it.
const idleDiscoveries = 2

// OnDemand makes gk a kind the cache watches only while wanted says so
// (and the identity may list and watch it); the cache asks at every
// discovery (call Rediscover when it may have changed) and stops watching
// after idleDiscoveries+1 discoveries in a row without a need. Call before
// Start.
func (c *Cache) OnDemand(gk schema.GroupKind, wanted Wanted) {
	c.access.mu.Lock()
	defer c.access.mu.Unlock()
	c.access.onDemand[gk] = wanted
}

// Watching reports whether the cache watches a kind now.
func (c *Cache) Watching(gk schema.GroupKind) bool {
	_, ok := c.Lookup(gk)
	return ok
}

// filter removes from found the kinds the cache may not or need not watch:
// on-demand kinds not wanted now, and kinds not watched yet that the
// controller-manager may not list and watch. A kind already watched is not
// asked about again.
func (c *Cache) filter(ctx context.Context, found map[schema.GroupKind]Kind) {
	logger := klog.FromContext(ctx).WithName("templates")
	a := &c.access
	a.mu.Lock()
	defer a.mu.Unlock()
	for gk, k := range found {
		reason, why := "", ""
		if wanted, ok := a.onDemand[gk]; ok {
			var want bool
			var err error
			want, why, err = wanted(ctx)
			switch {
			case err != nil:
				// Keep the current state: the question failed, not the need.
				logger.Error(err, "Deciding whether an on-demand kind is needed", "resource", k.GVR.String())
				if !c.Watching(gk) {
					delete(found, gk)
				}
				continue
			case want:
				delete(a.idle, gk)
			case c.Watching(gk) && a.idle[gk] < idleDiscoveries:
				// Keep watching a little longer: the last release of a
				// Secret still removes its finalizer through the cache.
				a.idle[gk]++
				continue
			default:
				delete(a.idle, gk)
				reason = "not needed: " + why
			}
		}
		if reason == "" && !c.Watching(gk) {
			ok, err := a.mayWatch(ctx, k.GVR)
			switch {
			case err != nil:
				reason = fmt.Sprintf("cannot ask whether the controller-manager may list and watch it: %v", err)
			case !ok:
				reason = "the controller-manager may not list and watch it cluster-wide (grant it to propagate this kind)"
				if _, demanded := a.onDemand[gk]; demanded {
					reason = "needed, but " + reason
				}
			}
		}
		if reason == "" {
			if _, demanded := a.onDemand[gk]; demanded && !c.Watching(gk) {
				logger.Info("Watching an on-demand kind", "resource", k.GVR.String(), "reason", why)
			}
			delete(a.skipped, gk)
			continue
		}
		delete(found, gk)
		if a.skipped[gk] != reason {
			a.skipped[gk] = reason
			logger.Info("Not watching a kind; its objects are not propagated", "resource", k.GVR.String(), "reason", reason)
		}
	}
}

// mayWatch asks the host whether this identity may list and watch a
// resource in every namespace.
func (a *access) mayWatch(ctx context.Context, gvr schema.GroupVersionResource) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Verb: verb},
		}}
		got, err := a.authz.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("access review of %s %s: %w", verb, gvr.GroupResource(), err)
		}
		if !got.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}
