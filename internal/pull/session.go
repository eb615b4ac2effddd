package pull

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
)

// HeartbeatStale is how long the hub waits for the agent's next Lease
// renewal before it counts the agent as silent. Agents renew every
// AgentHeartbeat; the damping of member.Options.FailureThreshold then
// applies as for push members' probes.
const HeartbeatStale = 12 * time.Second

// AgentHeartbeat is how often an agent renews its Lease.
const AgentHeartbeat = 4 * time.Second

// Config is what a pull session needs.
type Config struct {
	// Cluster is the MemberCluster's name.
	Cluster string
	// Hash identifies the configuration (see member.Member.ConfigHash).
	Hash string
	// Host reaches the hub as the controller-manager.
	Host *rest.Config
	// Client writes ClusterIntents.
	Client client.Client
	// Reader reads the MemberCluster (the agent's report), from a cache.
	Reader client.Reader
	// Options tune the heartbeat check like a push session's probe.
	Options member.Options
	// Initial is the health an earlier run recorded (nil if none).
	Initial *member.Observation
	// Notify is called, at most once per NotifyInterval, when the
	// snapshot changes.
	Notify func(context.Context)
}

// Session is a pull member as the controllers see it (member.Member).
type Session struct {
	cfg       Config
	namespace string
	opts      member.Options
	logger    klog.Logger
	handlers  member.Handlers

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	notifier *member.Notifier
	intents  cache.SharedIndexInformer
	leases   cache.SharedIndexInformer
	started  time.Time

	mu        sync.Mutex
	damper    *member.Damper
	beat      heartbeat
	resources []v1alpha1.APIResource
	mapper    meta.RESTMapper
	asked     map[string]time.Time  // intent name -> when the hub last read its usage
	reports   map[string]reportSeen // intent name -> the agent's report, as the hub saw it
	unseen    unseen                // intents created that the cache has not seen yet
}

var _ member.Member = (*Session)(nil)

// Start starts the pull session of a cluster: caches of its ClusterIntents
// and of its agent's Lease, and the heartbeat check. Events of the
// intents (the agent's reports) go to h.Object.
func Start(ctx context.Context, cfg Config, h member.Handlers) (*Session, error) {
	dyn, err := dynamic.NewForConfig(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for pull member %s: %w", cfg.Cluster, err)
	}
	kube, err := kubernetes.NewForConfig(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("client for pull member %s: %w", cfg.Cluster, err)
	}
	opts := cfg.Options.WithDefaults()
	ctx, cancel := context.WithCancel(ctx)
	s := &Session{
		cfg: cfg, namespace: v1alpha1.ClusterNamespace(cfg.Cluster), opts: opts, logger: klog.FromContext(ctx), handlers: h,
		ctx: ctx, cancel: cancel, notifier: member.NewNotifier(opts.NotifyInterval, cfg.Notify), started: time.Now(),
		damper: member.NewDamper(opts.FailureThreshold, opts.SuccessThreshold, cfg.Initial),
		// With nothing recorded (a new member) there is no earlier state
		// to keep: the first renewal seen counts.
		beat:    heartbeat{trustFirst: cfg.Initial == nil},
		asked:   map[string]time.Time{},
		reports: map[string]reportSeen{},
	}
	intents := dyn.Resource(v1alpha1.GroupVersion.WithResource("clusterintents")).Namespace(s.namespace)
	s.intents = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return intents.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return intents.Watch(ctx, o) },
	}, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{byObject: indexObject}})
	_ = s.intents.SetTransform(slim)
	_, _ = s.intents.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.seen(obj)
			s.notifyIntent(nil, obj)
		},
		UpdateFunc: func(old, obj any) {
			if old.(*unstructured.Unstructured).GetResourceVersion() != obj.(*unstructured.Unstructured).GetResourceVersion() {
				s.notifyIntent(old, obj)
			}
		},
		DeleteFunc: func(obj any) {
			s.forgetAutoscale(obj)
			s.notifyIntent(nil, obj)
		},
	})
	leases := kube.CoordinationV1().Leases(s.namespace)
	byName := fields.OneTermEqualSelector("metadata.name", v1alpha1.AgentLeaseName).String()
	s.leases = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return leases.Watch(ctx, o)
		},
	}, &coordinationv1.Lease{}, cache.SharedIndexInformerOptions{})
	s.wg.Go(func() { s.intents.RunWithContext(ctx) })
	s.wg.Go(func() { s.leases.RunWithContext(ctx) })
	s.wg.Go(func() { s.notifier.Run(ctx) })
	s.wg.Go(func() { s.checkLoop(ctx) })
	return s, nil
}

// notifyIntent passes a change of an intent on as an event of the member
// copy it stands for.
func (s *Session) notifyIntent(old, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || s.handlers.Object == nil {
		return
	}
	i := intent{u}
	ns, name := i.object()
	statusOnly := false
	if o, ok := old.(*unstructured.Unstructured); ok {
		if autoscaleOnly(intent{o}, i) {
			return
		}
		statusOnly = copyStatusOnly(intent{o}, i)
	}
	s.handlers.Object(member.ObjectEvent{Cluster: s.cfg.Cluster, Resource: i.resource(), Namespace: ns, Name: name, StatusOnly: statusOnly})
}

// Stop ends the session's goroutines.
func (s *Session) Stop() {
	s.cancel()
	s.wg.Wait()
}

// ClusterName is the MemberCluster's name.
func (s *Session) ClusterName() string { return s.cfg.Cluster }

// ConfigHash identifies the configuration the session was started with.
func (s *Session) ConfigHash() string { return s.cfg.Hash }

// Usable is always true: what reaches the member is the agent, which
// only a cluster's own credential can run as.
func (s *Session) Usable() bool { return true }

// Snapshot returns the damped health. The version, served kinds and
// capacity are not part of it: the agent writes them into the
// MemberCluster's status itself, and the cluster controller keeps them.
func (s *Session) Snapshot() member.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := member.Snapshot{}
	snap.Health, snap.HealthKnown = s.damper.Committed()
	return snap
}

// checkLoop observes the heartbeat and the agent's report every
// ProbeInterval.
func (s *Session) checkLoop(ctx context.Context) {
	for {
		changed := s.check(ctx, time.Now())
		if changed {
			s.notifier.Kick()
		}
		s.idleAutoscale(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.opts.ProbeInterval):
		}
	}
}

// check takes one observation of the heartbeat and refreshes the kinds
// the agent reported; it returns whether the committed health changed.
func (s *Session) check(ctx context.Context, now time.Time) bool {
	s.refreshResources(ctx)
	if !s.leases.HasSynced() {
		if now.Sub(s.started) < member.StallAfter {
			return false
		}
		// The cache cannot list the Lease (the controller-manager's role
		// lacks it, or the hub is overloaded): say so instead of nothing.
		return s.commit(func(*heartbeat) member.Observation {
			return member.Observation{Health: member.NotReady, Reason: ReasonAgentSilent, At: now,
				Message: fmt.Sprintf("the control plane cannot read the agent's heartbeat Lease %s/%s (see the controller-manager's log)", s.namespace, v1alpha1.AgentLeaseName)}
		})
	}
	var lease *coordinationv1.Lease
	if obj, ok, _ := s.leases.GetStore().GetByKey(s.namespace + "/" + v1alpha1.AgentLeaseName); ok {
		lease = obj.(*coordinationv1.Lease)
	}
	return s.commit(func(h *heartbeat) member.Observation { return h.observe(lease, now, HeartbeatStale) })
}

// commit feeds the observation observe takes (under the session's lock)
// to the damper, logs a change of the committed health and reports it.
func (s *Session) commit(observe func(*heartbeat) member.Observation) bool {
	s.mu.Lock()
	committed, changed := s.damper.Observe(observe(&s.beat))
	s.mu.Unlock()
	if changed {
		s.logger.Info("Member health changed", "health", committed.Health, "reason", committed.Reason, "message", committed.Message)
	}
	return changed
}

// refreshResources rebuilds the RESTMapper from the kinds the agent
// reported in the MemberCluster's status when they changed, and returns
// it (nil while the agent has reported none).
func (s *Session) refreshResources(ctx context.Context) meta.RESTMapper {
	mc := &v1alpha1.MemberCluster{}
	if err := s.cfg.Reader.Get(ctx, types.NamespacedName{Name: s.cfg.Cluster}, mc); err != nil || len(mc.Status.APIResources) == 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mapper
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mapper == nil || !slices.Equal(mc.Status.APIResources, s.resources) {
		s.resources, s.mapper = mc.Status.APIResources, Mapper(mc.Status.APIResources)
	}
	return s.mapper
}

// Mapper maps kinds to resources as a member reported them.
func Mapper(rs []v1alpha1.APIResource) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, r := range rs {
		scope := meta.RESTScopeRoot
		if r.Scope == v1alpha1.ScopeNamespaced {
			scope = meta.RESTScopeNamespace
		}
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		m.AddSpecific(gv.WithKind(r.Kind), gv.WithResource(r.Resource), gv.WithResource(strings.ToLower(r.Kind)), scope)
	}
	return m
}

// Resource maps a kind to the member's resource from the kinds the agent
// reported.
func (s *Session) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	s.mu.Lock()
	m := s.mapper
	s.mu.Unlock()
	if m == nil {
		// The first check has not run yet (a start): read the report now
		// rather than fail every object until it does.
		m = s.refreshResources(context.Background())
	}
	if m == nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("the cluster's agent has not reported the kinds the cluster serves yet")
	}
	return dispatch.Resource(m, gvk)
}

// WaitManaged waits while the intent cache lists (see
// member.Session.WaitManaged).
func (s *Session) WaitManaged(ctx context.Context, _ schema.GroupVersionResource) {
	if s.intents.HasSynced() {
		return
	}
	wait := min(member.SyncWait, time.Until(s.started.Add(member.StallAfter)))
	if wait <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cache.WaitForCacheSync(ctx.Done(), s.intents.HasSynced)
}

// lookup returns the cached intent of an object, and whether the cache
// has synced. An intent of the object's intent name that another object
// holds (see taken) is not the object's.
func (s *Session) lookup(gr schema.GroupResource, namespace, name string) (*intent, bool) {
	if !s.intents.HasSynced() {
		return nil, false
	}
	in := s.named(gr, namespace, name)
	if in == nil || !in.isFor(gr, namespace, name) {
		return nil, true
	}
	return in, true
}

// ManagedObject returns the projection of the member's copy that the
// agent last reported.
func (s *Session) ManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, member.CacheState) {
	in, synced := s.lookup(gvr.GroupResource(), namespace, name)
	switch {
	case !synced && time.Since(s.started) > member.StallAfter:
		return nil, member.CacheStalled
	case !synced:
		return nil, member.CacheSyncing
	case in == nil:
		return nil, member.CacheSynced
	}
	return in.copy(), member.CacheSynced
}

// PeekManagedObject returns the reported copy of an object that has an
// intent; an intent the agent has not reported on yet stands for a copy
// Flotilla wrote (dispatch.Written holds), so that a lost status update
// never hides it.
func (s *Session) PeekManagedObject(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	in, synced := s.lookup(gvr.GroupResource(), namespace, name)
	if !synced || in == nil {
		return nil, false
	}
	if c := in.copy(); c != nil {
		return c, true
	}
	stub := &unstructured.Unstructured{}
	stub.SetNamespace(namespace)
	stub.SetName(name)
	stub.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: dispatch.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	return stub, true
}

// Apply records in as the cluster's intent for the object when it differs
// from the recorded one (ErrAwaitingAgent until the agent reports on it),
// and otherwise returns what the agent reported: Unchanged when applied,
// dispatch.ErrConflict, or the member's error.
func (s *Session) Apply(ctx context.Context, gvr schema.GroupVersionResource, in *dispatch.Intent, opts dispatch.Options) (dispatch.Outcome, error) {
	obj := in.Object
	cur, synced := s.lookup(gvr.GroupResource(), obj.GetNamespace(), obj.GetName())
	if !synced {
		return "", member.ErrCacheSyncing
	}
	keep := make([]string, 0, len(opts.KeepLive))
	for _, p := range opts.KeepLive {
		keep = append(keep, strings.Join(p, "."))
	}
	switch {
	case cur != nil && cur.deleting():
		return "", fmt.Errorf("%w: its previous copy is being deleted", member.ErrAwaitingAgent)
	case cur == nil || cur.hash() != in.Hash || cur.adopt() != opts.Adopt || !slices.Equal(cur.keepLive(), keep) || cur.resource() != gvr || cur.suspended() ||
		releaseMarked(cur.u.GetAnnotations()):
		// A live intent marked for its copy's deletion (the delete after
		// the mark failed) is written afresh, without the mark: a
		// deletion by hand later must keep the copy.
		if err := s.taken(gvr.GroupResource(), obj.GetNamespace(), obj.GetName()); err != nil {
			return "", err
		}
		if err := s.write(ctx, cur, gvr, in, opts.Adopt, keep); err != nil {
			return "", err
		}
		return "", member.ErrAwaitingAgent
	case !cur.observed():
		return "", member.ErrAwaitingAgent
	}
	switch v1alpha1.IntentOutcome(cur.outcome()) {
	case v1alpha1.IntentConflict:
		return dispatch.Conflict, fmt.Errorf("%s: %w", cur.message(), dispatch.ErrConflict)
	case v1alpha1.IntentFailed:
		return "", errors.New(cur.message())
	}
	return dispatch.Unchanged, nil
}

// Suspend marks the intent of an object suspended, so that its agent
// leaves the member's copy as it is; the next Apply writes the intent
// afresh, which resumes it. An object without an intent has nothing to
// suspend.
func (s *Session) Suspend(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	cur, synced := s.lookup(gvr.GroupResource(), namespace, name)
	switch {
	case !synced:
		return member.ErrCacheSyncing
	case cur == nil || cur.deleting() || cur.suspended():
		return nil
	}
	ci := &v1alpha1.ClusterIntent{}
	ci.Namespace, ci.Name = s.namespace, cur.u.GetName()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspended":true}}`))
	if err := s.cfg.Client.Patch(ctx, ci, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("suspend intent %s/%s: %w", ci.Namespace, ci.Name, err)
	}
	return nil
}

// write creates or replaces the intent of in.
func (s *Session) write(ctx context.Context, cur *intent, gvr schema.GroupVersionResource, in *dispatch.Intent, adopt bool, keep []string) error {
	obj := in.Object
	ci := &v1alpha1.ClusterIntent{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.namespace, Name: IntentName(gvr.GroupResource(), obj.GetNamespace(), obj.GetName()),
			Finalizers: []string{v1alpha1.FinalizerAgent},
		},
		Spec: v1alpha1.ClusterIntentSpec{
			Resource: v1alpha1.IntentResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
			Object:   runtime.RawExtension{Object: obj}, Hash: in.Hash, Adopt: adopt, KeepLive: keep,
		},
	}
	if cur != nil {
		ci.Spec.Autoscale = cur.autoscale() // the autoscale controller's, not propagation's
	}
	if len(keep) == 0 {
		ci.Spec.KeepLive = nil
	}
	var err error
	if cur == nil {
		switch err = s.cfg.Client.Create(ctx, ci); {
		case err == nil:
			s.created(obj, ci)
		case mayExist(err):
			// Perhaps created (a timeout after the hub stored it), or
			// created before and not seen yet: remembered by name, so
			// that a delete meanwhile does not take it for absent.
			s.created(obj, &v1alpha1.ClusterIntent{ObjectMeta: metav1.ObjectMeta{Name: ci.Name}})
		}
	} else {
		ci.ResourceVersion = cur.u.GetResourceVersion()
		ci.Finalizers = cur.u.GetFinalizers()
		if !slices.Contains(ci.Finalizers, v1alpha1.FinalizerAgent) {
			ci.Finalizers = append(ci.Finalizers, v1alpha1.FinalizerAgent)
		}
		err = s.cfg.Client.Update(ctx, ci)
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return member.ErrCacheSyncing // the cache is behind: look again shortly
	case err != nil:
		return fmt.Errorf("record the intent for %s in %s: %w", obj.GetName(), s.namespace, err)
	}
	return nil
}

// Delete marks the object's intent for the deletion of its copy and
// deletes it (release.go); the agent deletes the copy and then lets the
// intent go. ErrAwaitingAgent until it is gone.
func (s *Session) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (dispatch.Outcome, error) {
	if !s.intents.HasSynced() {
		return "", member.ErrCacheSyncing
	}
	key := objectKey(gvk.GroupKind(), namespace, name)
	objs, _ := s.intents.GetIndexer().ByIndex(byObject, key)
	if len(objs) == 0 {
		return s.deleteUnseen(ctx, key)
	}
	cur := &intent{objs[0].(*unstructured.Unstructured)}
	marked := releaseMarked(cur.u.GetAnnotations())
	if cur.deleting() {
		if !marked {
			// Deleted by someone else meanwhile: the copy goes only with
			// the mark.
			if err := s.markRelease(ctx, cur.u.GetName(), cur.u.GetUID()); err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
		if v1alpha1.IntentOutcome(cur.outcome()) == v1alpha1.IntentDeleteFailed {
			return "", fmt.Errorf("%w: it could not delete the copy: %s", member.ErrAwaitingAgent, cur.message())
		}
		return "", member.ErrAwaitingAgent
	}
	if err := s.deleteIntent(ctx, cur.u.GetName(), cur.u.GetUID()); err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	return "", member.ErrAwaitingAgent
}

// UnschedulablePods reports none: agents do not report unschedulable pods
// yet, so replicas a pull member cannot schedule are not migrated.
func (s *Session) UnschedulablePods(string, labels.Selector) ([]member.UnschedulablePod, member.CacheState) {
	return nil, member.CacheSynced
}
