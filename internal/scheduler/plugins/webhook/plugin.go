package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

const (
	// DefaultTimeout bounds a call when spec.timeoutSeconds is unset.
	DefaultTimeout = 5 * time.Second
	// maxResponseBytes bounds a response body.
	maxResponseBytes = 8 << 20
	// maxExcerptBytes bounds the body quoted in an HTTP status error.
	maxExcerptBytes = 200
	// maxReasonBytes bounds a reason a webhook gives.
	maxReasonBytes = 256
)

// point is an extension point.
type point int

const (
	filterPoint point = iota
	scorePoint
	selectPoint
	replicasPoint
	numPoints
)

var (
	pointNames    = [numPoints]string{"filter", "score", "select", "replicas"}
	requestKinds  = [numPoints]string{KindFilterRequest, KindScoreRequest, KindSelectRequest, KindReplicasRequest}
	responseKinds = [numPoints]string{KindFilterResponse, KindScoreResponse, KindSelectResponse, KindReplicasResponse}
)

func (pt point) String() string { return pointNames[pt] }

// Plugin calls one SchedulerPluginWebhook. It is safe for concurrent use.
type Plugin struct {
	webhook string // the SchedulerPluginWebhook's name
	client  *http.Client
	urls    [numPoints]string // per point; "" when the webhook does not serve it
	timeout time.Duration     // per call; tests set it below a second
	ignore  bool              // failurePolicy Ignore
	// down is when (Unix nanoseconds) the webhook may be called again
	// after it timed out (see coolDown).
	down atomic.Int64
}

// coolDown is how long a webhook that timed out is not called: each
// decision would otherwise wait its timeout at every extension point,
// holding a scheduler worker that every object shares. Calls meanwhile
// fail at once with errCoolingDown (ignored under failurePolicy Ignore, as
// the timeout itself would be). A failure that comes at once (a refused
// connection, an error status) costs nothing and starts no cool-down.
const coolDown = 30 * time.Second

// errCoolingDown: the webhook is not called for now (see coolDown).
var errCoolingDown = errors.New("not called: it timed out less than 30s ago")

// New builds the plugin for the SchedulerPluginWebhook called name.
// clientCert is the certificate loaded from spec.tls.clientCertSecretRef
// (nil when unset). It fails when spec is invalid: a URL that is not an
// absolute http(s) URL, no path, an unknown payload version or failure
// policy, a CA bundle without certificates, or TLS settings on an http URL.
func New(name string, spec v1alpha1.SchedulerPluginWebhookSpec, clientCert *tls.Certificate) (*Plugin, error) {
	if name == "" {
		return nil, errors.New("webhook name is empty")
	}
	p := &Plugin{webhook: name, timeout: DefaultTimeout}
	switch spec.PayloadVersion {
	case "", PayloadVersion:
	default:
		return nil, fmt.Errorf("payloadVersion %q is not supported (want %s)", spec.PayloadVersion, PayloadVersion)
	}
	switch spec.FailurePolicy {
	case "", v1alpha1.FailurePolicyFail:
	case v1alpha1.FailurePolicyIgnore:
		p.ignore = true
	default:
		return nil, fmt.Errorf("failurePolicy %q is not Fail or Ignore", spec.FailurePolicy)
	}
	switch {
	case spec.TimeoutSeconds > 0:
		p.timeout = time.Duration(spec.TimeoutSeconds) * time.Second
	case spec.TimeoutSeconds < 0:
		return nil, fmt.Errorf("timeoutSeconds %d is negative", spec.TimeoutSeconds)
	}
	base, err := url.Parse(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("url %q is not an absolute http(s) URL", spec.URL)
	}
	paths := [numPoints]string{spec.Paths.Filter, spec.Paths.Score, spec.Paths.Select, spec.Paths.Replicas}
	served := false
	for pt, path := range paths {
		if path != "" {
			p.urls[pt] = base.JoinPath(path).String()
			served = true
		}
	}
	if !served {
		return nil, errors.New("paths: set at least one of filter, score, select and replicas")
	}
	tlsConfig, err := clientTLS(spec.TLS, clientCert)
	if err != nil {
		return nil, err
	}
	if base.Scheme == "http" && (tlsConfig.RootCAs != nil || len(tlsConfig.Certificates) > 0) {
		return nil, fmt.Errorf("url %q is plain http but tls sets a CA bundle or client certificate", spec.URL)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	p.client = &http.Client{
		Transport: transport,
		// A redirect is answered as the non-2xx status it is: a webhook
		// has one address, and following it elsewhere would resend the
		// request to a place nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p, nil
}

// clientTLS turns the spec's TLS settings into a client configuration.
func clientTLS(spec *v1alpha1.WebhookTLS, clientCert *tls.Certificate) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if clientCert != nil {
		cfg.Certificates = []tls.Certificate{*clientCert}
	}
	if spec == nil {
		return cfg, nil
	}
	if spec.CABundle != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(spec.CABundle)) {
			return nil, errors.New("tls.caBundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if spec.ClientCertSecretRef != nil && clientCert == nil {
		return nil, fmt.Errorf("tls.clientCertSecretRef names Secret %s but no client certificate was loaded", spec.ClientCertSecretRef.Name)
	}
	cfg.InsecureSkipVerify = spec.InsecureSkipVerify // the operator's explicit choice
	return cfg, nil
}

// Name returns "webhook/<name>", the name profiles refer to.
func (p *Plugin) Name() string { return "webhook/" + p.webhook }

// Points reports which extension points the webhook serves (has a path
// for); sel is the select point ("select" is a Go keyword).
func (p *Plugin) Points() (filter, score, sel, replicas bool) {
	return p.urls[filterPoint] != "", p.urls[scorePoint] != "", p.urls[selectPoint] != "", p.urls[replicasPoint] != ""
}

// Close releases the plugin's idle connections; call it when the plugin is
// replaced (the webhook changed or was deleted).
func (p *Plugin) Close() { p.client.CloseIdleConnections() }

// configured returns an error when the webhook does not serve pt.
func (p *Plugin) configured(pt point) error {
	if p.urls[pt] == "" {
		return fmt.Errorf("webhook %s has no %s path", p.webhook, pt)
	}
	return nil
}

// call POSTs req to pt's URL, decodes the response into out and checks it
// with validate. Errors read "<point>: POST <url>: <what went wrong>".
func (p *Plugin) call(ctx context.Context, pt point, req *Request, out any, validate func() error) error {
	target := p.urls[pt]
	wrap := func(err error) error { return fmt.Errorf("%s: POST %s: %w", pt, target, err) }
	req.APIVersion, req.Kind = APIVersion, requestKinds[pt]
	if time.Now().UnixNano() < p.down.Load() {
		return wrap(errCoolingDown)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return wrap(fmt.Errorf("encoding request: %w", err))
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return wrap(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "flotilla-scheduler")
	resp, err := p.client.Do(hreq)
	if err != nil {
		p.coolDownAfter(caller, err)
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is in our prefix already
		}
		return wrap(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		p.coolDownAfter(caller, err) // headers, then a body that never ends
		return wrap(fmt.Errorf("reading response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if ex := excerpt(data); ex != "" {
			return wrap(fmt.Errorf("HTTP %d: %s", resp.StatusCode, ex))
		}
		return wrap(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	if len(data) > maxResponseBytes {
		return wrap(fmt.Errorf("response is larger than %d bytes", maxResponseBytes))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return wrap(fmt.Errorf("decoding response: %w", err))
	}
	if err := validate(); err != nil {
		return wrap(err)
	}
	return nil
}

// coolDownAfter starts a cool-down when err is a timeout of the call and
// not the caller giving up (caller is the caller's context).
func (p *Plugin) coolDownAfter(caller context.Context, err error) {
	var netErr net.Error
	if caller.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()) {
		p.down.Store(time.Now().Add(coolDown).UnixNano())
	}
}

// ignored reports whether the failure err of pt is to be ignored (and logs
// it if so): under failurePolicy Ignore, unless the caller's context ended.
func (p *Plugin) ignored(ctx context.Context, pt point, err error) bool {
	if !p.ignore || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, errCoolingDown) {
		klog.FromContext(ctx).V(2).Info("Scheduler webhook not called; ignoring it (failurePolicy Ignore)", "plugin", p.Name(), "point", pt.String(), "err", err)
		return true
	}
	klog.FromContext(ctx).Error(err, "Scheduler webhook failed; ignoring it (failurePolicy Ignore)", "plugin", p.Name(), "point", pt.String())
	return true
}

// checkType checks a response's optional apiVersion and kind.
func checkType(t TypeInfo, pt point) error {
	if t.APIVersion != "" && t.APIVersion != APIVersion {
		return fmt.Errorf("response apiVersion is %q, want %q", t.APIVersion, APIVersion)
	}
	if t.Kind != "" && t.Kind != responseKinds[pt] {
		return fmt.Errorf("response kind is %q, want %q", t.Kind, responseKinds[pt])
	}
	return nil
}

// excerpt returns the start of an error body, as valid UTF-8 on one line.
func excerpt(body []byte) string {
	if len(body) > maxExcerptBytes {
		body = body[:maxExcerptBytes]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "?")), " ")
}

// truncate cuts a webhook's reason to maxReasonBytes on a rune boundary.
func truncate(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= maxReasonBytes {
		return s
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
