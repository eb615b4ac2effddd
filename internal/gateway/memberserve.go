package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/flotilla-io/flotilla/internal/membercache"
)

// memberHandler serves the member kinds from the cache: get, list and
// watch; the host's own handler takes writes of events (they are host
// objects), and every other write is refused.
type memberHandler struct {
	cache   *membercache.Cache
	members *members
	host    http.Handler
	params  runtime.ParameterCodec
	// authz is the gateway's authorizer (the host's RBAC), for the
	// checks the filters cannot make (create on exec for a WebSocket GET).
	authz authorizer.Authorizer
	// noStreamsIn are the namespaces into which no exec, attach or
	// port-forward is carried to a member (--no-streams-in).
	noStreamsIn map[string]bool
}

// serves reports whether the request is for a cached member kind.
func (h *memberHandler) serves(r *http.Request) bool {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return false
	}
	_, ok = h.cache.Kind(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource})
	return ok
}

func (h *memberHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, _ := request.RequestInfoFrom(r.Context())
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	k, _ := h.cache.Kind(gr)
	read := info.Verb == "get" || info.Verb == "list" || info.Verb == "watch"
	if !inScope(k, info) {
		h.fail(w, r, errNoSuchPath)
		return
	}
	if routes(info) {
		h.route(w, r, info)
		return
	}
	if !read && info.Subresource == "" {
		// Writes are the host's: a Pod or a ReplicaSet created here is a
		// template Flotilla propagates, an event is the host's own.
		h.host.ServeHTTP(w, r)
		return
	}
	if info.Subresource != "" {
		h.fail(w, r, statusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, gr, info.Name,
			fmt.Sprintf("the %s subresource of %s is not served by the gateway: %s are read from the member clusters (get, list, watch; pods also log, exec, attach, portforward, delete)", info.Subresource, gr.Resource, gr.Resource)))
		return
	}
	f, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		h.fail(w, r, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, gr, info.Name,
			"only application/json (objects, Tables or partial object metadata) is served for member kinds"))
		return
	}
	var opts metav1.ListOptions
	if err := h.params.DecodeParameters(r.URL.Query(), schema.GroupVersion{Version: "v1"}, &opts); err != nil {
		h.fail(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if name, member := splitName(info.Name); member != "" {
		if err := h.authorizeBareName(r, info, name); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	filter, err := filterFor(k, info, opts)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if info.Verb != "get" {
		if why := h.members.filling(gr); why != "" {
			h.fail(w, r, errFilling(gr, why))
			return
		}
		h.warnMissing(r, gr)
	}
	tw := tableWriter{kind: k, format: f, includeObject: includeObject(r)}
	switch info.Verb {
	case "get":
		h.get(w, r, k, info, tw)
	case "list":
		h.list(w, r, k, filter, opts, tw)
	case "watch":
		h.watch(w, r, k, filter, opts, tw)
	}
}

// errFilling is the answer to a read of gr while its cache fills after
// the gateway's start (members.filling): 429 with a Retry-After, as a
// kube-apiserver answers while its own cache initializes, which client-go
// (and so kubectl) retries.
func errFilling(gr schema.GroupResource, why string) error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("the gateway is still reading the members' %s after its start (%s)", gr.Resource, why), fillingRetry)
}

// inScope reports whether the request's path exists for k's scope, as it
// would on a kube-apiserver: a cluster-scoped kind has no namespaced path
// (/api/v1/namespaces/NS/nodes), and one object of a namespaced kind is
// named with its namespace (not /api/v1/pods/NAME). The filters
// authorized the request as its path reads ("list nodes in NS", which a
// RoleBinding may allow): it must not be served as something else. A
// list or watch across namespaces with a metadata.name field selector has
// a name too (the filters authorize it for that name), but no name in its
// path.
func inScope(k *membercache.Kind, info *request.RequestInfo) bool {
	if k.Namespaced {
		return info.Namespace != "" || info.Name == "" || (len(info.Parts) < 2 && (info.Verb == "list" || info.Verb == "watch"))
	}
	return info.Namespace == ""
}

// errNoSuchPath is a kube-apiserver's answer to a path it does not serve.
var errNoSuchPath = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
	Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{}}}

// warnMissing names the members whose objects a list, a watch or a
// failed get may lack.
func (h *memberHandler) warnMissing(r *http.Request, gr schema.GroupResource) {
	for _, msg := range h.members.warnings(gr) {
		warning.AddWarning(r.Context(), "", msg)
	}
}

func (h *memberHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{Version: "v1"}, w, r)
}

// statusError is an error answered as a Status with its own message.
func statusError(code int32, reason metav1.StatusReason, gr schema.GroupResource, name, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name},
	}}
}

// filterFor turns the request's namespace and selectors into a cache
// filter, refusing selectors as a kube-apiserver does (400).
func filterFor(k *membercache.Kind, info *request.RequestInfo, opts metav1.ListOptions) (membercache.Filter, error) {
	f := membercache.Filter{}
	if k.Namespaced {
		f.Namespace = info.Namespace
	}
	var named fields.Selector
	if info.Name != "" {
		// A watch of one object (/watch/namespaces/ns/pods/NAME) was
		// authorized for that name only: it sees that name only.
		name, member := splitName(info.Name)
		named = fields.OneTermEqualSelector("metadata.name", name)
		f.Field, f.Cluster = named, member
	}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return f, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		f.Label = sel
	}
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return f, apierrors.NewBadRequest(err.Error())
		}
		if err := k.ValidateFieldSelector(sel); err != nil {
			return f, apierrors.NewBadRequest(err.Error())
		}
		// metadata.name=NAME@member names the object NAME in that member
		// (the filters usually took the request's name from it, but not
		// for a /watch/ path).
		for _, req := range sel.Requirements() {
			if req.Field != "metadata.name" || (req.Operator != selection.Equals && req.Operator != selection.DoubleEquals) {
				continue
			}
			if _, member := splitName(req.Value); member != "" {
				if f.Cluster != "" && f.Cluster != member {
					return f, apierrors.NewBadRequest(fmt.Sprintf("the request names member %s and member %s", f.Cluster, member))
				}
				f.Cluster = member
			}
		}
		if sel, err = sel.Transform(func(field, value string) (string, string, error) {
			if field == "metadata.name" {
				value, _ = splitName(value)
			}
			return field, value, nil
		}); err != nil {
			return f, apierrors.NewBadRequest(err.Error())
		}
		f.Field = sel
		if named != nil {
			f.Field = fields.AndSelectors(named, sel)
		}
	}
	return f, nil
}

func includeObject(r *http.Request) metav1.IncludeObjectPolicy {
	switch p := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); p {
	case metav1.IncludeNone, metav1.IncludeObject:
		return p
	}
	return metav1.IncludeMetadata
}

func (h *memberHandler) get(w http.ResponseWriter, r *http.Request, k *membercache.Kind, info *request.RequestInfo, tw tableWriter) {
	ns := ""
	if k.Namespaced {
		ns = info.Namespace
	}
	name, member := splitName(info.Name)
	entries, err := h.cache.Get(k.GroupResource(), ns, name)
	if err != nil {
		h.fail(w, r, apierrors.NewInternalError(err))
		return
	}
	if member != "" {
		e, err := pick(entries, k.Resource.Resource, name, member)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		entries = []*membercache.Entry{e}
	}
	if len(entries) == 0 {
		if why := h.members.filling(k.GroupResource()); why != "" {
			h.fail(w, r, errFilling(k.GroupResource(), why))
			return
		}
		h.warnMissing(r, k.GroupResource())
		h.fail(w, r, apierrors.NewNotFound(k.GroupResource(), name))
		return
	}
	if len(entries) > 1 {
		others := make([]string, 0, len(entries)-1)
		for _, e := range entries[1:] {
			others = append(others, e.Cluster)
		}
		warning.AddWarning(r.Context(), "", fmt.Sprintf("%s %q is in members %s and %s: this is %s's (the first by member name); name another as %s@<member>",
			k.Resource.Resource, name, entries[0].Cluster, strings.Join(others, ", "), entries[0].Cluster, name))
	}
	e := entries[0]
	var body []byte
	if tw.format.as == "" {
		body, err = e.JSON()
	} else {
		body, err = tw.single(e)
	}
	if err != nil {
		h.fail(w, r, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (h *memberHandler) list(w http.ResponseWriter, r *http.Request, k *membercache.Kind, filter membercache.Filter, opts metav1.ListOptions, tw tableWriter) {
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && opts.ResourceVersion != "" {
		if cur, _ := h.cache.CurrentRV(k.GroupResource()); cur != opts.ResourceVersion {
			h.fail(w, r, apierrors.NewResourceExpired(fmt.Sprintf("the gateway serves member objects only as they are now (resourceVersion %s), not at resourceVersion %s", cur, opts.ResourceVersion)))
			return
		}
	}
	res, err := h.cache.List(k.GroupResource(), membercache.ListOptions{Filter: filter, Limit: opts.Limit, Continue: opts.Continue})
	switch {
	case errors.Is(err, membercache.ErrBadContinue):
		h.fail(w, r, apierrors.NewBadRequest("continue key is not valid: "+err.Error()))
		return
	case errors.Is(err, membercache.ErrExpired):
		h.fail(w, r, apierrors.NewResourceExpired("the provided continue parameter is too old to display a consistent list result; list again without it"))
		return
	case err != nil:
		h.fail(w, r, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	if tw.format.as != "" {
		_ = tw.list(bw, res)
		return
	}
	fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, k.ListKind, k.Resource.GroupVersion().String(), listMeta(res))
	var buf []byte
	for i, e := range res.Items {
		if buf, err = e.AppendJSON(buf[:0]); err != nil {
			// Headers are out: the client sees a truncated body and
			// fails to decode it rather than a list missing an item.
			klog.FromContext(r.Context()).Error(err, "Reading the member cache")
			return
		}
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(buf)
	}
	_, _ = bw.WriteString("]}\n")
}

// listMeta is a list's metadata as JSON.
func listMeta(res membercache.ListResult) string {
	m := metav1.ListMeta{ResourceVersion: res.RV, Continue: res.Continue}
	if res.Remaining > 0 {
		m.RemainingItemCount = &res.Remaining
	}
	b, _ := json.Marshal(m)
	return string(b)
}
