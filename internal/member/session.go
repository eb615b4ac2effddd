package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Options tune a session. Zero fields take the defaults of DefaultOptions.
type Options struct {
	// ProbeInterval is the time between health probes.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one health probe.
	ProbeTimeout time.Duration
	// DiscoveryInterval is the time between API discoveries while healthy.
	DiscoveryInterval time.Duration
	// FailureThreshold and SuccessThreshold damp flapping (see Damper).
	FailureThreshold, SuccessThreshold time.Duration
	// NotifyInterval is the shortest time between two change notifications,
	// so that pod churn in a member causes at most one status update per
	// interval.
	NotifyInterval time.Duration
	// ClientQPS and ClientBurst limit the requests to one member (0 keeps
	// the built-in 500/1000; a negative QPS removes the limit, leaving
	// protection to the member's API priority and fairness).
	ClientQPS   float32
	ClientBurst int
}

// DefaultOptions are the production defaults: a member that stops answering
// is marked unreachable within about 30 s (20 s of failed probes, each up to
// 5 s), and is Ready again 10 s after it recovers.
func DefaultOptions() Options {
	return Options{
		ProbeInterval:     5 * time.Second,
		ProbeTimeout:      5 * time.Second,
		DiscoveryInterval: 30 * time.Second,
		FailureThreshold:  20 * time.Second,
		SuccessThreshold:  10 * time.Second,
		NotifyInterval:    time.Second,
		ClientQPS:         defaultClientQPS,
		ClientBurst:       defaultClientBurst,
	}
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	for _, f := range []struct{ v, d *time.Duration }{
		{&o.ProbeInterval, &d.ProbeInterval}, {&o.ProbeTimeout, &d.ProbeTimeout},
		{&o.DiscoveryInterval, &d.DiscoveryInterval}, {&o.FailureThreshold, &d.FailureThreshold},
		{&o.SuccessThreshold, &d.SuccessThreshold}, {&o.NotifyInterval, &d.NotifyInterval},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if o.ClientQPS == 0 {
		o.ClientQPS, o.ClientBurst = defaultClientQPS, defaultClientBurst
	}
	if o.ClientBurst <= 0 {
		o.ClientBurst = max(int(o.ClientQPS)*2, 1)
	}
	return o
}

// The default client limits of a member connection: high enough that the
// member's own API priority and fairness, not the client, is what paces a
// burst.
const (
	defaultClientQPS   = 500
	defaultClientBurst = 1000
)

// discoveryTimeout bounds one API discovery.
const discoveryTimeout = 30 * time.Second

// Snapshot is what a session currently knows of its member.
type Snapshot struct {
	// Health is the committed (damped) health.
	Health Observation
	// HealthKnown says whether Health holds a probe result yet.
	HealthKnown bool
	// Version is the member's Kubernetes version, empty until discovered.
	Version string
	// APIResources are the resources the member serves, nil until
	// discovered.
	APIResources []v1alpha1.APIResource
	// Summary is the node count and resource totals.
	Summary Summary
	// SummaryKnown says whether the node and pod caches have filled, so
	// that Summary is complete.
	SummaryKnown bool
}

// Session is the control plane's live connection to one member: a probe
// loop, periodic discovery, node and pod caches, and a cache of unbound
// pods. notify is called (at most once per NotifyInterval, with a context
// that ends when the session stops) whenever the snapshot changes.
//
// A session with a claim first makes sure the member is claimed by it (see
// Claim): until then it is not usable (the Pool hides it from the
// propagation controllers) and it neither discovers nor caches anything;
// while the member belongs to someone else its health is NotReady with
// reason ClaimedElsewhere.
type Session struct {
	// Name is the MemberCluster's name.
	Name string
	// Hash identifies the configuration the session was built from.
	Hash string

	opts   Options
	client kubernetes.Interface
	// probe asks for /readyz without the client's rate limit.
	probe     rest.Interface
	discovery discovery.DiscoveryInterface
	// conns tracks every connection the session opened, so that Stop
	// closes them all, busy or idle.
	conns    *connrotation.Dialer
	notifier *Notifier
	logger   klog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// claim is verified before the session is used (nil: nothing to verify).
	claim *Claim
	// usable is set once the claim is verified.
	usable atomic.Bool
	// Owned by the probe goroutine.
	started          bool // inventory started
	lastDiscoveryErr string
	lastClaimErr     string
	lastAccessErr    string
	access           Access // the last answer of the member's rules review

	ctx      context.Context // ends when the session stops
	objects  *objectCaches
	mapper   meta.RESTMapper
	onObject ObjectHandler // set by the Pool before the session is published

	mu        sync.Mutex
	damper    *Damper
	version   string
	resources []v1alpha1.APIResource
	// failedGroups are the API groups whose discovery failed at the last
	// discovery (an aggregated apiserver down): a kind of theirs missing
	// from the member's mapping may still have objects. discovered says a
	// discovery completed (until then nothing is known to be missing).
	failedGroups map[string]bool
	discovered   bool
	inv          *inventory
	pending      *pendingPods // unbound pods, for UnschedulablePods
	// onUnschedulable is set by the Pool, possibly after the cache of
	// unbound pods has started.
	onUnschedulable UnschedulableHandler
}

// Start connects to a member and starts the session's goroutines; they log
// with the logger in ctx. initial is the health an earlier run recorded (nil
// if none), so that a restarted controller does not flip conditions. claim,
// when not nil, is verified (and recorded in an unclaimed member) before the
// session is usable.
func Start(ctx context.Context, name, hash string, cfg *rest.Config, opts Options, initial *Observation, claim *Claim, notify func(context.Context)) (*Session, error) {
	opts = opts.WithDefaults()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.ClientQPS, opts.ClientBurst
	// Every connection goes through a tracking dialer so that Stop closes
	// them all, including those still busy when the goroutines end (closing
	// only idle ones would leave those behind). A dialer of its own also
	// keeps client-go from sharing the transport with another session.
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	conns := connrotation.NewDialer(dial)
	cfg.Dial = conns.DialContext
	base, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("transport for member %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	// Every request is tied to the session's context: one made through a
	// Member taken before Stop (a write still in flight when the member's
	// endpoint changed) fails instead of reaching the old endpoint over a
	// fresh connection, and discovery calls, which take no context, never
	// keep Stop waiting for a hung member.
	rt := withContext(ctx, base)
	client, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: rt})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("client for member %s: %w", name, err)
	}
	// The probe is not rate limited: were it to wait behind the other
	// requests' token bucket (an operator's low --member-api-qps, many
	// autoscaler reads), it would time out and a healthy member would look
	// unreachable.
	unlimited := rest.CopyConfig(cfg)
	unlimited.QPS, unlimited.Burst = -1, 0
	probe, err := kubernetes.NewForConfigAndClient(unlimited, &http.Client{Transport: rt})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("probe client for member %s: %w", name, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, &http.Client{Transport: rt, Timeout: discoveryTimeout})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("discovery client for member %s: %w", name, err)
	}
	objects, err := newObjectCaches(rt, cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	s := &Session{
		Name: name, Hash: hash, opts: opts, client: client, probe: probe.CoreV1().RESTClient(), discovery: disco, conns: conns,
		notifier: NewNotifier(opts.NotifyInterval, notify), logger: klog.FromContext(ctx),
		ctx: ctx, cancel: cancel,
		objects: objects, mapper: &throttledMapper{ResettableRESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))},
		damper: NewDamper(opts.FailureThreshold, opts.SuccessThreshold, initial),
		claim:  claim,
	}
	s.usable.Store(claim == nil)
	s.wg.Go(func() { s.notifier.Run(ctx) })
	s.wg.Go(func() { s.probeLoop(ctx) })
	return s, nil
}

// Stop ends every goroutine of the session, closes its connections and
// returns when all are gone.
func (s *Session) Stop() {
	s.objects.stop()
	s.cancel()
	s.wg.Wait()
	s.conns.CloseAll()
}

// Client returns a client for the member.
func (s *Session) Client() kubernetes.Interface { return s.client }

// Usable reports whether the session may be used to reach the member: its
// claim on the member is verified (or it has none to verify).
func (s *Session) Usable() bool { return s.usable.Load() }

// Snapshot returns what the session knows now.
func (s *Session) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Version: s.version, APIResources: s.resources}
	snap.Health, snap.HealthKnown = s.damper.Committed()
	if s.inv != nil {
		snap.Summary, snap.SummaryKnown = s.inv.summary()
	}
	return snap
}

// EstimateNodes runs f with the member's node-level view, consistent for
// the length of the call (every change waits for f). It returns false
// without calling f while the node and pod caches are not filled yet.
func (s *Session) EstimateNodes(f func(Nodes)) bool {
	s.mu.Lock()
	inv := s.inv
	s.mu.Unlock()
	return inv != nil && inv.withCapacity(f)
}

func (s *Session) probeLoop(ctx context.Context) {
	var lastDiscovery time.Time
	unanswered := 0 // probes in a row that got no answer
	for {
		o := Probe(ctx, s.probe, s.opts.ProbeTimeout, time.Now)
		if o.Health == Unreachable {
			unanswered++
		} else {
			unanswered = 0
		}
		if unanswered == 2 {
			// Twice no answer: the connection the session's requests
			// share may be dead without a reset (a dropped NAT entry),
			// which HTTP/2 notices only after its ping timeouts (45 s).
			// Start afresh, once per failure, so that the next probe
			// dials; one slow probe of a live member aborts nothing.
			s.conns.CloseAll()
		}
		if o.Health == Healthy && !s.usable.Load() {
			// The member answers: before anything else, make sure it is
			// this MemberCluster's to use.
			o = s.claimObservation(ctx, o)
		}
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		committed, changed := s.damper.Observe(o)
		s.mu.Unlock()
		if changed {
			s.logger.Info("Member health changed", "health", committed.Health, "reason", committed.Reason, "message", committed.Message)
		}
		if o.Health == Healthy {
			if !s.started {
				s.startInventory(ctx)
			}
			if time.Since(lastDiscovery) >= s.opts.DiscoveryInterval {
				// A failed discovery is retried at the next probe.
				ok, discovered := s.discover(ctx)
				if ok {
					lastDiscovery = time.Now()
				}
				changed = changed || discovered
			}
		}
		if changed {
			s.changed()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.opts.ProbeInterval):
		}
	}
}

// startInventory starts the node and pod caches and the cache of unbound
// pods. The latter has no part in the summary, so its sync delays nothing.
func (s *Session) startInventory(ctx context.Context) {
	s.started = true
	inv := newInventory(s.client, s.changed)
	pending := newPendingPods(s.client, s.unschedulable)
	s.mu.Lock()
	s.inv, s.pending = inv, pending
	s.mu.Unlock()
	s.wg.Go(func() { inv.run(ctx) })
	s.wg.Go(func() { pending.run(ctx) })
}

// unschedulable passes a pod that turned unschedulable to the Pool's
// handlers.
func (s *Session) unschedulable(p *pendingPod) {
	s.mu.Lock()
	h := s.onUnschedulable
	s.mu.Unlock()
	if h == nil {
		return
	}
	h(UnschedulableEvent{Cluster: s.Name, Namespace: p.Namespace, Name: p.Name, Owner: p.Owner, OwnerName: p.OwnerName, Labels: p.Labels})
}

// discover refreshes the version and API resources and reports whether the
// discovery completed and whether they changed. When some API groups fail
// (an aggregated apiserver is down), their previous entries are kept, so a
// flapping group does not rewrite the status at every probe. A failure is
// logged once per distinct error.
func (s *Session) discover(ctx context.Context) (ok, changed bool) {
	v, err := s.discovery.ServerVersion()
	var resources []v1alpha1.APIResource
	if err == nil {
		resources, err = Discover(s.discovery)
	}
	if err != nil {
		if msg := err.Error(); msg != s.lastDiscoveryErr {
			s.lastDiscoveryErr = msg
			s.logger.Error(err, "API discovery failed")
		}
		if resources == nil {
			return false, false
		}
	} else {
		s.lastDiscoveryErr = ""
	}
	access := s.reviewAccess(ctx) // only once the member answered discovery
	s.mu.Lock()
	defer s.mu.Unlock()
	resources = keepFailedGroups(resources, s.resources, err)
	s.failedGroups, s.discovered = failedGroups(err), true
	access.MarkReadOnly(resources)
	changed = s.version != v.GitVersion || !slices.Equal(s.resources, resources)
	s.version, s.resources = v.GitVersion, resources
	return true, changed
}

// reviewAccess asks the member what the session's identity may write, so
// that discovery can mark the kinds it may not (a restricted join). When
// the member does not answer, the last answer stands (none: every kind is
// taken as writable); a failure is logged once per distinct error.
func (s *Session) reviewAccess(ctx context.Context) Access {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
	defer cancel()
	access, err := ReviewAccess(ctx, s.client)
	if err != nil {
		if msg := err.Error(); msg != s.lastAccessErr {
			s.lastAccessErr = msg
			s.logger.Error(err, "Reviewing the control plane's access failed; keeping the last answer")
		}
		return s.access
	}
	s.lastAccessErr = ""
	s.access = access
	return access
}

// failedGroups are the groups an ErrGroupDiscoveryFailed names (nil for
// any other error).
func failedGroups(err error) map[string]bool {
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return nil
	}
	out := make(map[string]bool, len(failed.Groups))
	for gv := range failed.Groups {
		out[gv.Group] = true
	}
	return out
}

// kindUnavailable reports whether a kind the member's mapping does not
// know may still have objects there: no discovery completed yet (a
// session just started), the member's last discovery of its group failed,
// or it listed the kind (the mapping's newer look found the group
// missing: an aggregated apiserver that went down since, or a CRD deleted
// since, which the next discovery tells apart).
func (s *Session) kindUnavailable(gk schema.GroupKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.discovered || s.failedGroups[gk.Group] {
		return true
	}
	for _, r := range s.resources {
		if r.Group == gk.Group && r.Kind == gk.Kind {
			return true
		}
	}
	return false
}

// keepFailedGroups adds to fresh the previous entries of the group versions
// whose discovery failed.
func keepFailedGroups(fresh, previous []v1alpha1.APIResource, err error) []v1alpha1.APIResource {
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return fresh
	}
	for _, r := range previous {
		if _, ok := failed.Groups[schema.GroupVersion{Group: r.Group, Version: r.Version}]; ok {
			fresh = append(fresh, r)
		}
	}
	SortAPIResources(fresh)
	return fresh
}

// changed asks for a notification; several within NotifyInterval coalesce.
func (s *Session) changed() { s.notifier.Kick() }
