package tunnel

import (
	"fmt"
	"net/http"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/flotilla-io/flotilla/internal/apiproxy"
	"github.com/flotilla-io/flotilla/internal/membercache"
)

// readable are the kinds the gateway may read through a tunnel (get,
// list, watch): those its member cache can hold.
var readable = func() sets.Set[schema.GroupResource] {
	out := sets.New[schema.GroupResource]()
	for _, k := range membercache.KnownKinds() {
		out.Insert(schema.ParseGroupResource(k))
	}
	return out
}()

// podStreams are the pod subresources the gateway routes to the member
// running the pod, with the verbs their requests come as (a WebSocket
// client sends GET, SPDY sends POST).
var podStreams = map[string]sets.Set[string]{
	"log":         sets.New("get"),
	"exec":        sets.New("get", "create"),
	"attach":      sets.New("get", "create"),
	"portforward": sets.New("get", "create"),
}

var requestInfo = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Allowed reports why the agent refuses to forward r, or nil: a tunnel
// carries only reads of the kinds the gateway's member cache holds, a
// pod's log, exec, attach and port-forward, and the deletion of one pod.
// Paths must be clean, so that what is checked is what the member serves.
func Allowed(r *http.Request) error {
	_, err := allowed(r)
	return err
}

// allowed is Allowed, with the request's parsed attributes.
func allowed(r *http.Request) (*apirequest.RequestInfo, error) {
	p := r.URL.Path
	if r.URL.RawPath != "" || path.Clean(p) != p || strings.Contains(p, "//") {
		return nil, fmt.Errorf("path %q is not in canonical form", r.URL.Path)
	}
	info, err := requestInfo.NewRequestInfo(r)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	}
	if !info.IsResourceRequest {
		return nil, fmt.Errorf("%s %s is not a resource request", r.Method, p)
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	pods := gr == schema.GroupResource{Resource: "pods"}
	switch {
	case info.Subresource == "" && readable.Has(gr) && (info.Verb == "get" || info.Verb == "list" || info.Verb == "watch"):
		return info, nil
	case pods && info.Name != "" && podStreams[info.Subresource].Has(info.Verb):
		return info, nil
	case pods && info.Name != "" && info.Subresource == "" && info.Verb == "delete":
		return info, nil
	}
	what := gr.String()
	if info.Subresource != "" {
		what += "/" + info.Subresource
	}
	return nil, fmt.Errorf("%s of %s is not carried: a tunnel carries reads of %s, a pod's log, exec, attach and portforward, and the deletion of a pod", info.Verb, what, strings.Join(membercache.KnownKinds(), ", "))
}

// streamAllowed refuses exec, attach and port-forward into the denied
// namespaces (the agent's own and kube-system by default: a shell there
// would reach the agent's member credential or the cluster's own
// components). info is an allowed request's.
func streamAllowed(info *apirequest.RequestInfo, denied sets.Set[string]) error {
	if !streamSubresources.Has(info.Subresource) || !denied.Has(info.Namespace) {
		return nil
	}
	return fmt.Errorf("%s into namespace %s is not carried (flotilla agent --gateway-no-streams-in)", info.Subresource, info.Namespace)
}

// streamSubresources open a shell or a network path into a pod.
var streamSubresources = sets.New("exec", "attach", "portforward")

// identityHeaders are request headers that claim an identity: the agent
// drops them, so that the hub cannot act as anyone but the agent.
var identityHeaders = []string{"Authorization", "Proxy-Authorization"}

var identityPrefixes = []string{"Impersonate-", "X-Remote-"}

// MemberHandler serves a tunnel's requests on the agent: it refuses what
// Allowed refuses and exec, attach and port-forward streams into the
// namespaces of noStreams (403, with the reason), and forwards the rest
// to the member with member's credentials (the agent's own, or a narrower
// identity for the gateway), after dropping any header that claims an
// identity.
func MemberHandler(cluster string, member *rest.Config, noStreams []string) (http.Handler, error) {
	host, h, err := apiproxy.New(member, errorResponder{cluster: cluster}, nil)
	if err != nil {
		return nil, fmt.Errorf("proxy to member %s: %w", cluster, err)
	}
	h.RejectForwardingRedirects = true // as the gateway's member routes (a redirect is a 502)
	denied := sets.New(noStreams...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := allowed(r)
		if err == nil {
			err = streamAllowed(info, denied)
		}
		if err != nil {
			klog.FromContext(r.Context()).V(2).Info("Refusing a tunnel request", "cluster", cluster, "method", r.Method, "path", r.URL.Path, "reason", err.Error())
			writeStatus(w, r, apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("the agent of member %s: %w", cluster, err)))
			return
		}
		out := r.Clone(r.Context())
		for k := range out.Header {
			for _, p := range identityPrefixes {
				if strings.HasPrefix(http.CanonicalHeaderKey(k), p) {
					out.Header.Del(k)
				}
			}
		}
		for _, k := range identityHeaders {
			out.Header.Del(k)
		}
		apiproxy.Direct(out, host)
		h.ServeHTTP(w, out)
	}), nil
}

// errorResponder answers 503 when the member's apiserver cannot be
// reached, as the gateway does for a push member.
type errorResponder struct{ cluster string }

func (e errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Forwarding a tunnel request failed", "cluster", e.cluster, "path", r.URL.Path)
	writeStatus(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("member %s's apiserver did not answer its agent: %s (the agent's log has the details)", e.cluster, apiproxy.Unreachable(err))))
}

func writeStatus(w http.ResponseWriter, r *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{Version: "v1"}, w, r)
}
