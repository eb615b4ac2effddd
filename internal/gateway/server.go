package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	genericfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/membercache"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// scheme and codecs encode the Status objects the gateway itself answers
// with (errors); everything else is the host's.
var (
	scheme = newScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(s, gv)
	s.AddUnversionedTypes(gv, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}

// Options configure the gateway.
type Options struct {
	// SecureServing is the HTTPS endpoint (--bind-address, --secure-port,
	// --tls-cert-file, --tls-private-key-file).
	SecureServing *options.SecureServingOptionsWithLoopback
	// Authentication checks client certificates against --client-ca-file
	// and bearer tokens with TokenReviews to the host.
	Authentication *options.DelegatingAuthenticationOptions
	// Authorization asks the host (SubjectAccessReviews).
	Authorization *options.DelegatingAuthorizationOptions
	// Audit is the audit log (--audit-log-path, --audit-policy-file).
	Audit *options.AuditOptions
	// HostKubeconfig is the gateway's own identity on the host (allowed to
	// impersonate, create TokenReviews and SubjectAccessReviews; see
	// config/rbac/gateway.yaml). It also serves authentication and
	// authorization unless their own kubeconfig flags are given.
	HostKubeconfig string
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// requests served at once (0: no limit).
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// RequestTimeout bounds a request that is not a watch or a stream.
	RequestTimeout time.Duration
	// MemberKinds are the kinds served from the members' objects rather
	// than the host's (pods, events, nodes, ...; none: every kind is the
	// host's).
	MemberKinds []string
	// WatchHistory is how many recent changes per member kind a watch can
	// resume from.
	WatchHistory int
	// ForwardUserTokens sends a request for a host kind that a bearer
	// token alone authenticated to the host with that token, rather than
	// as the gateway impersonating its user (usertoken.go).
	ForwardUserTokens bool
	// AllowInsecureMembers lets the gateway reach push members with a
	// plain http apiEndpoint or tls.insecureSkipVerify (tests only); by
	// default they are left out, as the controller-manager refuses them.
	AllowInsecureMembers bool
	// NoStreamsIn are namespaces into which the gateway carries no exec,
	// attach or port-forward to a member, whatever the host's RBAC allows
	// (the members' own components run there).
	NoStreamsIn []string
	// AnonymousAuth serves requests without credentials as
	// system:anonymous (as the host's RBAC allows); false refuses them with
	// 401, except the health checks.
	AnonymousAuth bool
}

// NewOptions returns the defaults: port 8443, requests without
// credentials refused except the health checks, no audit log.
func NewOptions() *Options {
	o := &Options{
		SecureServing:               options.NewSecureServingOptions().WithLoopback(),
		Authentication:              options.NewDelegatingAuthenticationOptions(),
		Authorization:               options.NewDelegatingAuthorizationOptions(),
		Audit:                       options.NewAuditOptions(),
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		RequestTimeout:              time.Minute,
		MemberKinds:                 membercache.DefaultKinds,
		WatchHistory:                10_000,
		ForwardUserTokens:           true,
		NoStreamsIn:                 []string{"kube-system", v1alpha1.SystemNamespace},
	}
	o.SecureServing.BindPort = 8443
	o.SecureServing.ServerCert.PairName = "flotilla-gateway"
	// HTTP/1.1 unless asked: an exchange costs the gateway less than an
	// HTTP/2 stream (docs/gateway.md, "Protocols").
	o.SecureServing.DisableHTTP2Serving = true
	// The client CA comes from --client-ca-file, not from the host's
	// kube-system/extension-apiserver-authentication ConfigMap, and no
	// front proxy may assert identities through request headers.
	o.Authentication.SkipInClusterLookup = true
	o.Authentication.RequestHeader = options.RequestHeaderAuthenticationOptions{}
	return o
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	if f := fs.Lookup("disable-http2-serving"); f != nil {
		f.Usage = "serve HTTP/1.1 only (one connection per request or watch in progress, cheaper per request); false: offer HTTP/2 as well, many requests to a connection"
	}
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	o.Audit.AddFlags(fs)
	fs.StringVar(&o.HostKubeconfig, "host-kubeconfig", o.HostKubeconfig, "kubeconfig of the gateway's own identity on the host (impersonate, tokenreviews, subjectaccessreviews; config/rbac/gateway.yaml); requests for host kinds go there as the user")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "most non-mutating requests served at once (0: no limit); more get 429")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "most mutating requests served at once (0: no limit); more get 429")
	fs.StringSliceVar(&o.MemberKinds, "member-kinds", o.MemberKinds, "kinds served from the member clusters' objects (a multi-cluster cache, read-only, with a CLUSTER column) instead of the host's; known: "+strings.Join(membercache.KnownKinds(), ", ")+`; "" serves every kind from the host`)
	fs.IntVar(&o.WatchHistory, "member-watch-history", o.WatchHistory, "recent changes per member kind a watch can resume from; a watch from an older resourceVersion gets 410 Gone and relists")
	fs.BoolVar(&o.ForwardUserTokens, "forward-user-tokens", o.ForwardUserTokens, "send a request for a host kind that a bearer token alone authenticated to the host with that token (the host authenticates the user itself); false: always as the gateway impersonating the user. Client certificates and --as always impersonate")
	fs.BoolVar(&o.AllowInsecureMembers, "allow-insecure-members", o.AllowInsecureMembers, "for tests only: cache and route to push members with an http:// apiEndpoint or tls.insecureSkipVerify (their credentials then travel unprotected); by default they are left out with a warning, as the controller-manager refuses them")
	fs.StringSliceVar(&o.NoStreamsIn, "no-streams-in", o.NoStreamsIn, "namespaces into which no exec, attach or port-forward is carried to a member, whatever the host's RBAC allows (the members' own components and Flotilla's member identity run there); \"\" carries them everywhere the host's RBAC allows")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "serve requests without credentials as system:anonymous, as the host's RBAC allows it; false: refuse them with 401, except /healthz, /livez and /readyz")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "longest a request other than a watch, log, exec or port-forward may take")
}

// Validate refuses options the gateway cannot start with.
func (o *Options) Validate() error {
	var errs []error
	if o.HostKubeconfig == "" {
		errs = append(errs, fmt.Errorf("--host-kubeconfig is required: the gateway's identity on the host"))
	}
	if o.Authentication.ClientCert.ClientCA == "" {
		errs = append(errs, fmt.Errorf("--client-ca-file is required: the CA of the host's client certificates (the gateway authenticates users as the host does)"))
	}
	if _, err := membercache.ParseKinds(o.MemberKinds); err != nil {
		errs = append(errs, fmt.Errorf("--member-kinds: %w", err))
	}
	if o.WatchHistory <= 0 {
		errs = append(errs, fmt.Errorf("--member-watch-history must be positive, got %d", o.WatchHistory))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout must be positive, got %s", o.RequestTimeout))
	}
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	return errors.Join(errs...)
}

// longRunning are the requests the request timeout does not cut: watches
// and streams.
var longRunning = genericfilters.BasicLongRunningRequestCheck(
	sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward", tunnel.Subresource),
)

// ownPaths are served by the gateway itself; member kinds come from the
// member cache; everything else is the host's.
func ownPath(p string) bool {
	for _, own := range []string{"/healthz", "/livez", "/readyz", "/metrics"} {
		if p == own || strings.HasPrefix(p, own+"/") {
			return true
		}
	}
	return false
}

// Server is a configured gateway, ready to run.
type Server struct {
	generic *genericapiserver.GenericAPIServer
	members *members
}

// New builds the gateway from validated options.
func New(o *Options) (*Server, error) {
	if o.Authentication.RemoteKubeConfigFile == "" {
		o.Authentication.RemoteKubeConfigFile = o.HostKubeconfig
	}
	if o.Authorization.RemoteKubeConfigFile == "" {
		o.Authorization.RemoteKubeConfigFile = o.HostKubeconfig
	}
	hostCfg, err := clientcmd.BuildConfigFromFlags("", o.HostKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--host-kubeconfig: %w", err)
	}
	hostCfg.UserAgent = "flotilla-gateway"
	host, err := newHostProxy(hostCfg, o.ForwardUserTokens)
	if err != nil {
		return nil, err
	}
	// Without --tls-cert-file: a self-signed certificate for this host's
	// loopback names (a real deployment gives its own).
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}); err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	kinds, err := membercache.ParseKinds(o.MemberKinds)
	if err != nil {
		return nil, fmt.Errorf("--member-kinds: %w", err)
	}
	mc := membercache.New(kinds, membercache.Options{History: o.WatchHistory})
	mem, err := newMembers(mc, hostCfg, o.AllowInsecureMembers)
	if err != nil {
		return nil, err
	}
	memberKinds := &memberHandler{cache: mc, members: mem, host: host, params: runtime.NewParameterCodec(scheme), noStreamsIn: map[string]bool{}}
	for _, ns := range o.NoStreamsIn {
		if ns = strings.TrimSpace(ns); ns != "" {
			memberKinds.noStreamsIn[ns] = true
		}
	}
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	cfg.FeatureGate = withoutTracing{utilfeature.DefaultFeatureGate}
	if err := o.SecureServing.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("serving: %w", err)
	}
	if err := o.Authentication.ApplyTo(&cfg.Authentication, cfg.SecureServing, nil); err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if o.ForwardUserTokens {
		if err := tokensCheckedBy(o.Authentication.RemoteKubeConfigFile, hostCfg); err != nil {
			return nil, err
		}
		cfg.Authentication.Authenticator = markBearer(cfg.Authentication.Authenticator)
	}
	if cfg.Authentication.Authenticator != nil {
		if !o.AnonymousAuth {
			cfg.Authentication.Authenticator = withoutAnonymous(cfg.Authentication.Authenticator)
		}
		cfg.Authentication.Authenticator = reserveStack(cfg.Authentication.Authenticator)
	}
	if err := o.Authorization.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("authorization: %w", err)
	}
	if err := o.Audit.ApplyTo(cfg); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight = o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight
	cfg.RequestTimeout = o.RequestTimeout
	cfg.LongRunningFunc = longRunning
	cfg.EnableMetrics = true
	cfg.BuildHandlerChainFunc = func(own http.Handler, c *genericapiserver.Config) http.Handler {
		memberKinds.authz = c.Authorization.Authorizer
		mem.authz = c.Authorization.Authorizer
		if c.SecureServing != nil {
			mem.clientCA = c.SecureServing.ClientCA
		}
		route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ownPath(r.URL.Path) {
				own.ServeHTTP(w, r)
				return
			}
			if isTunnel(r) {
				mem.acceptTunnel(w, r)
				return
			}
			if memberKinds.serves(r) {
				memberKinds.ServeHTTP(w, r)
				return
			}
			host.ServeHTTP(w, r)
		})
		chain := genericapiserver.DefaultBuildHandlerChain(route, c)
		if o.ForwardUserTokens {
			chain = withUserToken(chain)
		}
		return withImpersonationMark(chain)
	}
	hostCS, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return nil, err
	}
	cfg.ReadyzChecks = append(cfg.ReadyzChecks, healthz.NamedCheck("host", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		_, err := hostCS.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("the host apiserver is not ready: %w", err)
		}
		return nil
	}))
	generic, err := cfg.Complete(nil).New("flotilla-gateway", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	return &Server{generic: generic, members: mem}, nil
}

// Run serves until ctx ends, then shuts down gracefully. The member cache
// fills in the background: for up to warmUp, reads of member kinds are
// answered 429 until every ready member is listed (members.filling);
// after that, a member not listed yet is named in a warning.
func (s *Server) Run(ctx context.Context) error {
	s.members.base = ctx
	s.members.mu.Lock()
	s.members.started = time.Now()
	s.members.mu.Unlock()
	go s.members.run(ctx)
	return s.generic.PrepareRun().RunWithContext(ctx)
}

// tokensCheckedBy refuses to forward users' tokens to the host unless the
// host is what checks them (the TokenReviews of --authentication-kubeconfig
// go to the host's server): a token checked elsewhere may mean someone
// else to the host, and must not be sent to it.
func tokensCheckedBy(authKubeconfig string, host *rest.Config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", authKubeconfig)
	if err != nil {
		return fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	if strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(host.Host, "/") {
		return fmt.Errorf("--forward-user-tokens sends users' bearer tokens to the host, but --authentication-kubeconfig has them checked by %s, not the host (%s): use the host, or --forward-user-tokens=false", cfg.Host, host.Host)
	}
	return nil
}

// withoutTracing is the feature gate the gateway's filter chain is built
// with: the process's gate, but with APIServerTracing off. The gateway
// configures no tracer, so the tracing filter (otelhttp, ~20 µs of CPU per
// request) would only record spans nobody receives. The proxy still passes
// a client's traceparent header on to the host unchanged.
type withoutTracing struct{ featuregate.FeatureGate }

// Enabled reports whether f is on: never for APIServerTracing.
func (g withoutTracing) Enabled(f featuregate.Feature) bool {
	return f != genericfeatures.APIServerTracing && g.FeatureGate.Enabled(f)
}
