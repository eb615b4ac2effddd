package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/flotilla-io/flotilla/internal/apiproxy"
	"github.com/flotilla-io/flotilla/internal/membercache"
)

// memberRoute forwards requests to one member's apiserver with the
// gateway's session for that member (the control plane's credentials),
// never with the user's: the host's RBAC has decided before.
type memberRoute struct {
	host    *url.URL
	handler *proxy.UpgradeAwareHandler
}

func newMemberRoute(name string, cfg *rest.Config) (*memberRoute, error) {
	host, h, err := apiproxy.New(cfg, errorResponder{what: "member " + name + "'s apiserver"}, nil)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	// A member's apiserver never redirects the pod requests routed to it;
	// one that does (compromised, or an impostor at its address) would
	// send the user's client, with its credentials, wherever it likes. As
	// kube-apiserver does for aggregated APIs, the redirect becomes a 502.
	// (This covers logs and deletion; exec, attach and port-forward are
	// upgrades, which the handler already fails on any 3xx.)
	h.RejectForwardingRedirects = true
	return &memberRoute{host: host, handler: h}, nil
}

// routedSubresources are the pod subresources served by the member that
// runs the pod.
var routedSubresources = map[string]bool{"log": true, "exec": true, "attach": true, "portforward": true}

// streamSubresources give a shell or a network path into a pod: like
// kube-apiserver, the gateway requires create on them even for the GET a
// WebSocket client sends.
var streamSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true}

// routedVerbs are the verbs a kube-apiserver serves for each routed pod
// subresource ("": the pod itself, deleted).
var routedVerbs = map[string]map[string]bool{
	"":            {"delete": true},
	"log":         {"get": true},
	"exec":        {"get": true, "create": true},
	"attach":      {"get": true, "create": true},
	"portforward": {"get": true, "create": true},
}

// routes reports whether the request goes to the member that owns a pod:
// a pod's logs, exec, attach, port-forward, or its deletion.
func routes(info *request.RequestInfo) bool {
	if info.APIGroup != "" || info.Resource != "pods" || info.Name == "" {
		return false
	}
	return routedSubresources[info.Subresource] || (info.Subresource == "" && info.Verb == "delete")
}

// splitName reads "name@member", the gateway's way to name one member's
// object when several members have one of that name ('@' is not allowed
// in object names).
func splitName(s string) (name, member string) {
	// "name@" names no member: it stays one (invalid) name, found nowhere.
	if i := strings.LastIndexByte(s, '@'); i > 0 && i < len(s)-1 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// pick returns the one entry a request names: with a member, that
// member's; without one, the only member's, or an error naming them.
func pick(entries []*membercache.Entry, gr string, name, member string) (*membercache.Entry, error) {
	if member != "" {
		for _, e := range entries {
			if e.Cluster == member {
				return e, nil
			}
		}
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("%s %q not found in member %s", gr, name, member), Details: &metav1.StatusDetails{Kind: gr, Name: name + "@" + member}}}
	}
	switch len(entries) {
	case 0:
		return nil, apierrors.NewNotFound(corev1.Resource(gr), name)
	case 1:
		return entries[0], nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Cluster
	}
	return nil, statusError(http.StatusConflict, metav1.StatusReasonConflict, corev1.Resource(gr), name,
		fmt.Sprintf("%s %q is in members %s: name one as %s@<member> (for example %s@%s)", gr, name, strings.Join(names, ", "), name, name, names[0]))
}

// route forwards a pod request to the member running the pod.
func (h *memberHandler) route(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) {
	name, member := splitName(info.Name)
	// namespaces/NS/pods/NAME[/SUB] and nothing more: the member gets a
	// path rebuilt from what was authorized.
	valid := (info.Subresource == "" && len(info.Parts) == 2) || (info.Subresource != "" && len(info.Parts) == 3)
	if !valid || name == "" {
		h.fail(w, r, apierrors.NewNotFound(corev1.Resource("pods"), info.Name))
		return
	}
	if !routedVerbs[info.Subresource][info.Verb] {
		// The filters authorized the verb the path reads as (a watch of
		// pods/log, a list): it must not be served as the member's get.
		if info.Verb == "watch" || info.Verb == "list" {
			h.fail(w, r, errNoSuchPath)
		} else {
			h.fail(w, r, apierrors.NewMethodNotSupported(corev1.Resource("pods/"+info.Subresource), info.Verb))
		}
		return
	}
	if streamSubresources[info.Subresource] && h.noStreamsIn[info.Namespace] {
		// The member's own components (and Flotilla's member identity)
		// run there: a right to exec into them on the host, where they
		// do not run, must not become a shell next to them in every
		// member.
		h.fail(w, r, apierrors.NewForbidden(corev1.Resource("pods/"+info.Subresource), info.Name,
			fmt.Errorf("the gateway does not carry %s into namespace %s of a member (flotilla gateway --no-streams-in)", info.Subresource, info.Namespace)))
		return
	}
	if member != "" {
		if err := h.authorizeBareName(r, info, name); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if streamSubresources[info.Subresource] && info.Verb != "create" {
		// A WebSocket client opens exec with GET: the host would ask for
		// create, on the name as requested and on the pod's own name
		// (before the cache is read, so that the answer tells nothing of
		// the pods to someone who may not).
		for _, n := range slices.Compact([]string{info.Name, name}) {
			if err := h.authorizeCreate(r, info, n); err != nil {
				h.fail(w, r, err)
				return
			}
		}
	}
	if info.Verb == "delete" {
		if err := checkDeleteOptions(r, info.Name); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	entries, err := h.cache.Get(corev1.Resource("pods"), info.Namespace, name)
	if err != nil {
		h.fail(w, r, apierrors.NewInternalError(err))
		return
	}
	e, err := pick(entries, "pods", name, member)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rt, ok := h.members.route(e.Cluster)
	if !ok {
		h.fail(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("member %s is not connected to the gateway", e.Cluster)))
		return
	}
	klog.FromContext(r.Context()).V(2).Info("Routing to a member", "cluster", e.Cluster, "verb", info.Verb, "subresource", info.Subresource, "pod", klog.KRef(info.Namespace, name))
	out := r.Clone(r.Context())
	out.URL.Path = "/api/v1/namespaces/" + info.Namespace + "/pods/" + name
	if info.Subresource != "" {
		out.URL.Path += "/" + info.Subresource
	}
	out.URL.RawPath = ""
	apiproxy.Direct(out, rt.host)
	stripCredentials(out.Header)
	rt.handler.ServeHTTP(w, out)
}

// wsBearerPrefix marks a bearer token a WebSocket client sends as a
// subprotocol.
const wsBearerPrefix = "base64url.bearer.authorization.k8s.io."

// stripCredentials removes from a request to a member or to the host
// whatever could carry the user's credentials or claim an identity: the
// other end must see the gateway's session (and, for the host, the
// identity the gateway's transport then adds) only.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for k := range h {
		if hasPrefixFold(k, "X-Remote-") || hasPrefixFold(k, "Impersonate-") {
			delete(h, k)
		}
	}
	if protos := h.Values("Sec-WebSocket-Protocol"); len(protos) > 0 {
		var keep []string
		for _, v := range protos {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, wsBearerPrefix) {
					keep = append(keep, p)
				}
			}
		}
		h.Del("Sec-WebSocket-Protocol")
		if len(keep) > 0 {
			h.Set("Sec-WebSocket-Protocol", strings.Join(keep, ","))
		}
	}
}

// hasPrefixFold reports whether s begins with prefix, ignoring case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// authorizeBareName asks the host whether the user may do the request's
// verb on the object's own name too: the filters authorized "NAME@member",
// which a rule or webhook about NAME would not see.
func (h *memberHandler) authorizeBareName(r *http.Request, info *request.RequestInfo, name string) error {
	u, ok := request.UserFrom(r.Context())
	if !ok || h.authz == nil {
		return apierrors.NewInternalError(fmt.Errorf("no user or authorizer"))
	}
	attrs := authorizer.AttributesRecord{User: u, Verb: info.Verb, Namespace: info.Namespace, APIGroup: info.APIGroup, APIVersion: info.APIVersion,
		Resource: info.Resource, Subresource: info.Subresource, Name: name, ResourceRequest: true}
	if decision, reason, _ := h.authz.Authorize(r.Context(), attrs); decision != authorizer.DecisionAllow {
		return apierrors.NewForbidden(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, name,
			fmt.Errorf("User %q cannot %s resource %q in API group %q in the namespace %q: %s", u.GetName(), info.Verb, info.Resource, info.APIGroup, info.Namespace, reason))
	}
	return nil
}

// authorizeCreate asks the host whether the user may create the
// subresource (exec, attach, portforward).
func (h *memberHandler) authorizeCreate(r *http.Request, info *request.RequestInfo, name string) error {
	u, ok := request.UserFrom(r.Context())
	if !ok || h.authz == nil {
		return apierrors.NewInternalError(fmt.Errorf("no user or authorizer for %s", info.Subresource))
	}
	attrs := authorizer.AttributesRecord{User: u, Verb: "create", Namespace: info.Namespace, APIVersion: "v1",
		Resource: "pods", Subresource: info.Subresource, Name: name, ResourceRequest: true}
	decision, reason, err := h.authz.Authorize(r.Context(), attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	msg := fmt.Sprintf("User %q cannot create resource \"pods/%s\" in API group \"\" in the namespace %q", u.GetName(), info.Subresource, info.Namespace)
	if reason != "" {
		msg += ": " + reason
	}
	if err != nil {
		msg += ": " + err.Error()
	}
	return apierrors.NewForbidden(corev1.Resource("pods/"+info.Subresource), name, fmt.Errorf("%s", msg))
}
