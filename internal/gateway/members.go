package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/membercache"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// members keeps one member-cache feed per MemberCluster: it watches the
// MemberClusters and their credentials Secrets on the host and starts,
// replaces (new endpoint, credentials or agent tunnel) or stops each
// member's feed. A renewed bearer token is swapped in without a relist.
// A pull member is fed through the tunnel its agent opens to the
// gateway (tunnel.go).
type members struct {
	cache   *membercache.Cache
	host    kubernetes.Interface
	dynamic dynamic.Interface

	mu     sync.Mutex
	feeds  map[string]*feed
	status map[string]memberStatus
	kick   chan struct{}

	mcs     cache.GenericLister
	secrets cache.GenericLister

	// tunnels are the pull members' agents' tunnels; authz re-checks an
	// agent's right to keep its tunnel; clientCA is what the gateway's
	// x509 authenticator verifies client certificates with (a
	// certificate's tunnel lasts as long as it is valid); base is the
	// context tunnels live in (the gateway's).
	tunnels  *tunnel.Registry
	authz    authorizer.Authorizer
	clientCA dynamiccertificates.CAContentProvider
	base     context.Context

	// allowInsecure lets the gateway reach push members over plain http
	// or without verifying their serving certificate (tests only, as the
	// controller-manager's --allow-insecure-members).
	allowInsecure bool

	// started is when the gateway started serving (Server.Run); listed
	// is set once the MemberClusters were read and a feed started for
	// each (see filling).
	started time.Time
	listed  bool
}

// warmUp bounds how long after the gateway starts a read of a member kind
// is answered 429 while the cache fills (filling). client-go retries a 429
// ten times, each after its Retry-After (fillingRetry): 20 s in all, past
// warmUp, so that a client that asks early is answered, not failed.
const (
	warmUp       = 15 * time.Second
	fillingRetry = 2
)

// filling says why the cache of gr is still filling after the gateway
// started ("" once it is not, and always from warmUp on): the
// MemberClusters are not read yet, or a ready member that should feed gr
// (with no known problem and no error of its feed) or the host's own feed
// has not listed yet. A list served then would lack whole members, and an
// informer that relists after the gateway's restart (the resourceVersions
// of the last process are gone) would take their objects for deleted.
func (m *members) filling(gr schema.GroupResource) string {
	m.mu.Lock()
	started, listed := m.started, m.listed
	m.mu.Unlock()
	if started.IsZero() || time.Since(started) >= warmUp {
		return "" // every read after the first seconds: nothing to look at
	}
	if !listed {
		return "the MemberClusters are not read yet"
	}
	sources := m.cache.Sources(gr) // not under m.mu, as in warnings
	m.mu.Lock()
	var names []string
	for n, st := range m.status {
		// A Ready pull member's agent reopens its tunnel within seconds
		// of a gateway restart: it is waited for too.
		if st.ready && (st.problem == "" || st.noTunnel) {
			names = append(names, n)
		}
	}
	m.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		if src, fed := sources[n]; !fed || (!src.Synced && src.Err == "") {
			return fmt.Sprintf("member %s's %s are not listed yet", n, gr.Resource)
		}
	}
	if src, ok := sources[""]; ok && !src.Synced && src.Err == "" {
		return fmt.Sprintf("the host's own %s are not listed yet", gr.Resource)
	}
	return ""
}

// feed is one member's running cache feed.
type feed struct {
	hash   string
	token  *member.Token
	cancel context.CancelFunc
	route  *memberRoute
}

// memberStatus is what the gateway knows of a member besides its feed.
type memberStatus struct {
	// pull is true for syncMode Pull: the gateway reaches the member
	// through its agent's tunnel.
	pull bool
	// problem says why no feed runs ("" when one does); noTunnel: the
	// problem is a pull member's agent that has no tunnel open (yet).
	problem  string
	noTunnel bool
	// ready and readyReason are the MemberCluster's Ready condition.
	ready       bool
	readyReason string
}

var memberClustersGVR = v1alpha1.GroupVersion.WithResource("memberclusters")

func newMembers(c *membercache.Cache, hostCfg *rest.Config, allowInsecure bool) (*members, error) {
	host, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(hostCfg)
	if err != nil {
		return nil, err
	}
	m := &members{cache: c, host: host, dynamic: dyn, feeds: map[string]*feed{}, status: map[string]memberStatus{}, kick: make(chan struct{}, 1),
		allowInsecure: allowInsecure}
	m.tunnels = tunnel.NewRegistry(func(string) { m.trigger() })
	return m, nil
}

// run watches the host until ctx ends. With events or ReplicaSets among
// the cached kinds, the host's own are fed in too (cluster "").
func (m *members) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("members")
	ctx = klog.NewContext(ctx, logger)
	mcInf := dynamicinformer.NewFilteredDynamicInformer(m.dynamic, memberClustersGVR, "", 0, cache.Indexers{}, nil)
	secretFactory := informers.NewSharedInformerFactoryWithOptions(m.host, 0, informers.WithNamespace(v1alpha1.SystemNamespace))
	secretInf := secretFactory.Core().V1().Secrets().Informer()
	m.mcs = mcInf.Lister()
	m.secrets = cache.NewGenericLister(secretInf.GetIndexer(), corev1.Resource("secrets"))
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.trigger() },
		UpdateFunc: func(any, any) { m.trigger() },
		DeleteFunc: func(any) { m.trigger() },
	}
	_, _ = mcInf.Informer().AddEventHandler(handler)
	_, _ = secretInf.AddEventHandler(handler)
	go mcInf.Informer().RunWithContext(ctx)
	secretFactory.Start(ctx.Done())
	// The host's own events, and its ReplicaSets (the revision history of
	// federated Deployments, which kubectl rollout history and undo read),
	// are served beside the members'.
	for _, gr := range []schema.GroupResource{corev1.Resource("events"), appsv1.Resource("replicasets")} {
		if _, ok := m.cache.Kind(gr); ok {
			_ = m.cache.RunKind(ctx, gr, "", m.host)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), mcInf.Informer().HasSynced, secretInf.HasSynced) {
		return
	}
	m.trigger()
	for {
		select {
		case <-ctx.Done():
			m.stopAll()
			m.tunnels.CloseAll()
			return
		case <-m.kick:
			m.sync(ctx)
			m.mu.Lock()
			m.listed = true
			m.mu.Unlock()
		}
	}
}

func (m *members) trigger() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// sync brings the feeds in line with the MemberClusters.
func (m *members) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	objs, err := m.mcs.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing MemberClusters")
		return
	}
	seen := map[string]bool{}
	for _, o := range objs {
		mc, err := toMemberCluster(o)
		if err != nil {
			logger.Error(err, "Reading a MemberCluster")
			continue
		}
		seen[mc.Name] = true
		m.syncOne(ctx, mc)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, f := range m.feeds {
		if !seen[name] {
			logger.Info("Member left: dropping its cached objects", "cluster", name)
			f.cancel()
			delete(m.feeds, name)
			m.cache.RemoveCluster(name)
		}
	}
	for name := range m.status {
		if !seen[name] {
			delete(m.status, name)
		}
	}
}

func (m *members) syncOne(ctx context.Context, mc *v1alpha1.MemberCluster) {
	st := memberStatus{pull: mc.Spec.SyncMode == v1alpha1.SyncModePull}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		// The reason only: the message may name the member's endpoint,
		// and the warnings go to any reader of member kinds.
		st.ready, st.readyReason = c.Status == "True", c.Reason
	} else {
		st.ready, st.readyReason = false, "not probed yet"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.feeds[mc.Name]
	w := m.way(mc)
	switch {
	case w.problem != "" && st.pull && old != nil && strings.HasPrefix(old.hash, "tunnel/"):
		// The agent's tunnel closed: what it last fed stays, marked
		// stale by its failing watches, until the agent is back.
		m.status[mc.Name] = st
		return
	case w.problem != "":
		if prev := m.status[mc.Name]; prev.problem != w.problem {
			klog.FromContext(ctx).Info("Member left out", "cluster", mc.Name, "reason", w.problem, "detail", w.detail)
		}
		if old != nil {
			old.cancel()
			delete(m.feeds, mc.Name)
			m.cache.RemoveCluster(mc.Name)
		}
		st.problem, st.noTunnel = w.problem, w.noTunnel
		m.status[mc.Name] = st
		return
	case old != nil && old.hash == w.hash:
		if old.token != nil && w.secret != nil {
			old.token.Set(string(w.secret.Data[member.KeyToken]))
		}
		m.status[mc.Name] = st
		return
	}
	if old != nil {
		old.cancel()
		delete(m.feeds, mc.Name)
	}
	cfg, tok, err := w.config()
	if err == nil {
		cfg.UserAgent = "flotilla-gateway/" + mc.Name
		var cs kubernetes.Interface
		var rt *memberRoute
		if cs, err = kubernetes.NewForConfig(cfg); err == nil {
			rt, err = newMemberRoute(mc.Name, cfg)
		}
		if err == nil {
			fctx, cancel := context.WithCancel(ctx)
			m.feeds[mc.Name] = &feed{hash: w.hash, token: tok, cancel: cancel, route: rt}
			klog.FromContext(ctx).Info("Caching member objects", "cluster", mc.Name, "through", w.through)
			m.cache.Run(klog.NewContext(fctx, klog.FromContext(ctx).WithValues("cluster", mc.Name)), mc.Name, cs)
		}
	}
	if err != nil {
		// Whatever an earlier feed cached is not kept up to date now:
		// leave it out, as the warning says.
		m.cache.RemoveCluster(mc.Name)
		st.problem = "the gateway cannot build a client for it"
		if prev := m.status[mc.Name]; prev.problem != st.problem {
			klog.FromContext(ctx).Error(err, "Member left out: building its client", "cluster", mc.Name)
		}
	}
	m.status[mc.Name] = st
}

// way is how the gateway reaches a member: a push member's endpoint with
// its credentials Secret, or a pull member's agent tunnel.
type way struct {
	// problem says why there is none, in words for any reader of the
	// gateway's warnings; detail adds what only the log may say;
	// noTunnel: the problem is a pull member's agent without a tunnel.
	problem, detail string
	noTunnel        bool
	// hash changes when the way does (the feed then restarts).
	hash string
	// through names it in logs.
	through string
	secret  *corev1.Secret
	config  func() (*rest.Config, *member.Token, error)
}

func (m *members) way(mc *v1alpha1.MemberCluster) way {
	if mc.Spec.SyncMode == v1alpha1.SyncModePull {
		s, ok := m.tunnels.Current(mc.Name)
		if !ok {
			return way{problem: "its agent has no tunnel open to this gateway (flotilla agent --gateway-url)", noTunnel: true}
		}
		return way{hash: fmt.Sprintf("tunnel/%d", s.Seq), through: fmt.Sprintf("the agent's tunnel %d (%s)", s.Seq, s.Agent),
			config: func() (*rest.Config, *member.Token, error) { return s.Config(), nil, nil }}
	}
	if mc.Spec.SecretRef == nil {
		return way{problem: "it names no credentials Secret"}
	}
	// The same rules as the cluster controller's (member/trust.go): a
	// member's credentials go only to its own endpoint, and only over a
	// verified TLS connection.
	if insecure := member.Insecurities(mc); len(insecure) > 0 && !m.allowInsecure {
		return way{problem: "its endpoint is not secure (plain http or TLS verification skipped)", detail: strings.Join(insecure, "; ")}
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c != nil &&
		(c.Reason == member.ReasonClaimedElsewhere || c.Reason == member.ReasonClaimFailed) {
		return way{problem: "the cluster controller refuses it (" + c.Reason + ")"}
	}
	o, err := m.secrets.ByNamespace(v1alpha1.SystemNamespace).Get(mc.Spec.SecretRef.Name)
	if err != nil {
		return way{problem: "its credentials cannot be read",
			detail: fmt.Sprintf("credentials Secret %s/%s: %v", v1alpha1.SystemNamespace, mc.Spec.SecretRef.Name, err)}
	}
	secret := o.(*corev1.Secret)
	if err := member.CheckBinding(mc, secret); err != nil {
		return way{problem: "its credentials Secret is not bound to it", detail: err.Error()}
	}
	return way{hash: member.ConfigHash(mc, secret), through: mc.Spec.APIEndpoint, secret: secret,
		config: func() (*rest.Config, *member.Token, error) { return member.RESTConfigWithToken(mc, secret) }}
}

func (m *members) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, f := range m.feeds {
		f.cancel()
		delete(m.feeds, name)
	}
}

// route returns the way to a member's apiserver.
func (m *members) route(cluster string) (*memberRoute, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.feeds[cluster]
	if !ok || f.route == nil {
		return nil, false
	}
	return f.route, true
}

// warnings says, for a read of gr, which members' objects are missing or
// may be stale, one sentence each, ordered by member.
func (m *members) warnings(gr schema.GroupResource) []string {
	sources := m.cache.Sources(gr)
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.status))
	for n := range m.status {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		st := m.status[n]
		src, fed := sources[n]
		switch {
		case st.problem != "":
			out = append(out, fmt.Sprintf("member %s is left out: %s", n, st.problem))
		case !fed || !src.Synced:
			why := "not listed yet"
			if fed && src.Err != "" {
				why = "not listed: " + src.Err
			}
			out = append(out, fmt.Sprintf("member %s is left out: its %s are %s", n, gr.Resource, why))
		case !st.ready:
			out = append(out, fmt.Sprintf("member %s is not ready (%s): its %s are as last seen", n, st.readyReason, gr.Resource))
		case st.pull && !m.hasTunnel(n):
			out = append(out, fmt.Sprintf("member %s's agent has no tunnel open to the gateway: its %s are as last seen", n, gr.Resource))
		case src.Err != "":
			out = append(out, fmt.Sprintf("member %s does not answer the gateway's watch (%s): its %s are as last seen", n, src.Err, gr.Resource))
		}
	}
	if src, ok := sources[""]; ok && !src.Synced {
		out = append(out, fmt.Sprintf("the host's own %s are left out: not listed yet %s", gr.Resource, src.Err))
	}
	return out
}

func (m *members) hasTunnel(cluster string) bool {
	_, ok := m.tunnels.Current(cluster)
	return ok
}

func toMemberCluster(o runtime.Object) (*v1alpha1.MemberCluster, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", o)
	}
	mc := &v1alpha1.MemberCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, mc); err != nil {
		return nil, fmt.Errorf("MemberCluster %s: %w", u.GetName(), err)
	}
	return mc, nil
}
