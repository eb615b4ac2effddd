package member

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/autoscale"
	"github.com/flotilla-io/flotilla/internal/dispatch"
)

// Member is one member cluster as the controllers see it, whatever
// carries the traffic. A push Session (this package) talks to the
// member's apiserver with credentials the hub holds; a pull session
// (internal/pull) records intents on the hub for the member's agent,
// which applies them with a push Session of its own inside the member.
// Propagation, status and migration are written against this interface
// only, so both modes run the same code.
type Member interface {
	// ClusterName is the MemberCluster's name.
	ClusterName() string
	// ConfigHash identifies the configuration the member was reached
	// with; a different one makes the cluster controller start anew.
	ConfigHash() string
	// Usable reports whether the member may be used (see Session.Usable).
	Usable() bool
	// Snapshot returns what is known of the member now.
	Snapshot() Snapshot
	// Stop ends everything the member runs and returns when it has.
	Stop()

	// Resource returns the member's resource for a kind and whether it is
	// namespaced (dispatch.Resource).
	Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)
	// WaitManaged waits a little while the cache of gvr lists (see
	// Session.WaitManaged).
	WaitManaged(ctx context.Context, gvr schema.GroupVersionResource)
	// ManagedObject returns the projection (dispatch.Project) of the
	// member's managed copy of an object and the cache's state.
	ManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, CacheState)
	// PeekManagedObject is ManagedObject of an already synced cache; it
	// starts nothing.
	PeekManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool)
	// Apply makes the member's copy hold in (a copy of resource gvr).
	// ErrCacheSyncing: not known yet, try again shortly; ErrAwaitingAgent
	// (pull): handed over, the agent has not reported back.
	Apply(ctx context.Context, gvr schema.GroupVersionResource, in *dispatch.Intent, opts dispatch.Options) (dispatch.Outcome, error)
	// Suspend makes sure nothing reverts member-side edits of the copy of
	// an object whose federation is suspended: a push member needs
	// nothing (only Apply writes); a pull member's intent is marked
	// suspended for its agent. The next Apply resumes.
	Suspend(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error
	// Delete deletes the member's managed copy of an object (an unmanaged
	// one is a dispatch.ErrConflict).
	Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (dispatch.Outcome, error)
	// PodUsage returns the resource usage of a workload's pods in the
	// member, per resource (Session.PodUsage).
	PodUsage(ctx context.Context, w Workload) (map[corev1.ResourceName]autoscale.Usage, error)
	// Autoscalers returns the member's HorizontalPodAutoscalers that
	// scale a workload.
	Autoscalers(ctx context.Context, w Workload) ([]v1alpha1.MemberAutoscaler, error)
	// RemoveAutoscalers deletes the named member HPAs of a workload that
	// Flotilla does not manage (a federated HPA took them over); a pull
	// member's agent deletes them.
	RemoveAutoscalers(ctx context.Context, w Workload, names []string) error
	// UnschedulablePods returns the member's unschedulable pods in
	// namespace that match selector, and the state of the cache they come
	// from (see Session.UnschedulablePods).
	UnschedulablePods(namespace string, selector labels.Selector) ([]UnschedulablePod, CacheState)
}

// ErrCacheSyncing says that the member's cache of a kind is still
// listing, so a copy cannot be compared yet.
var ErrCacheSyncing = errors.New("waiting for the member's cache of the kind to sync")

// ErrAwaitingAgent says that a pull member's agent has not yet reported
// the outcome of the latest intent.
var ErrAwaitingAgent = errors.New("handed to the cluster's agent; waiting for it to report")

// Handlers are where a Member sends its events; a Pool fans them out to
// its subscribers.
type Handlers struct {
	// Object receives the events of managed copies.
	Object ObjectHandler
	// Unschedulable receives the pods that turn unschedulable.
	Unschedulable UnschedulableHandler
}

var _ Member = (*Session)(nil)

// ClusterName is the MemberCluster's name.
func (s *Session) ClusterName() string { return s.Name }

// Suspend does nothing for a push member: its copies are written only by
// Apply, which a suspended object does not call.
func (s *Session) Suspend(context.Context, schema.GroupVersionResource, string, string) error {
	return nil
}

// ConfigHash identifies the configuration the session was built from.
func (s *Session) ConfigHash() string { return s.Hash }

// Resource returns the member's resource for a kind from its discovery.
func (s *Session) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	return dispatch.Resource(s.mapper, gvk)
}

// Apply writes in into the member through server-side apply, deciding
// "unchanged" from the session's cache when it can (dispatch creates the
// object's namespace if needed). A cache of gvr that is still listing is
// ErrCacheSyncing; a stalled one makes Apply read the copy.
func (s *Session) Apply(ctx context.Context, gvr schema.GroupVersionResource, in *dispatch.Intent, opts dispatch.Options) (dispatch.Outcome, error) {
	obj := in.Object
	live, state := s.ManagedObject(gvr, obj.GetNamespace(), obj.GetName())
	switch state {
	case CacheSyncing:
		return "", ErrCacheSyncing
	case CacheSynced:
		opts.Live = live // nil: absent or unmanaged, Apply reads it
	}
	opts.Verified = s.objects.verified
	applier := &dispatch.Applier{Client: s.objects.client, Mapper: s.mapper}
	return applier.ApplyIntent(ctx, in, opts)
}

// Delete deletes the member's managed copy of an object.
func (s *Session) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (dispatch.Outcome, error) {
	applier := &dispatch.Applier{Client: s.objects.client, Mapper: s.mapper, Unavailable: s.kindUnavailable}
	return applier.Delete(ctx, gvk, namespace, name)
}
