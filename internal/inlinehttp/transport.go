// Package inlinehttp is an HTTP/1.1 client transport for one server that
// does each exchange on the goroutine that asked for it.
//
// net/http's Transport gives every connection a read goroutine and a
// write goroutine and hands each request and response between them and
// the caller: four or more goroutine wake-ups per exchange. On a machine
// whose cores the server itself keeps busy (the gateway and the host
// apiserver on one node), those wake-ups are a large part of what a
// forwarded small request costs. Here the caller writes the request,
// reads the response and then the body itself on a connection it holds
// alone until the body is done; no other goroutine is involved.
//
// It handles only what it can retry safely: GET and HEAD requests without
// a body (a reused connection the server closed meanwhile is replaced and
// the request sent again). Everything else goes to the fallback
// transport.
package inlinehttp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transport is an http.RoundTripper for one server. Build one with New
// or Wrapper.
type Transport struct {
	addr     string // as requests name it
	dialAddr string // with the scheme's port if addr has none
	host     string // addr without its port: the TLS server name
	https    bool
	fallback http.RoundTripper
	// dialer returns the TLS configuration (nil for plain HTTP) and dial
	// function for a new connection.
	dialer func() (*tls.Config, dialFunc, error)

	mu   sync.Mutex
	idle []*conn // most recently used last
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a Transport.
type Options struct {
	// Addr is the server's host:port; requests for any other host go to
	// Fallback.
	Addr string
	// TLS is the client TLS configuration (nil for plain HTTP). Its
	// NextProtos are replaced with http/1.1.
	TLS *tls.Config
	// Fallback carries the requests this transport does not (other
	// methods, requests with a body, other hosts).
	Fallback http.RoundTripper
}

// Limits on kept connections: how many idle connections stay open, and
// for how long an idle one is trusted before it is closed instead.
const (
	maxIdle          = 64
	idleTimeout      = 60 * time.Second
	dialTimeout      = 30 * time.Second
	handshakeTimeout = 10 * time.Second
)

// New returns a Transport for o.
func New(o Options) (*Transport, error) {
	dial := (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	return newTransport(o.Addr, o.TLS != nil, o.Fallback, func() (*tls.Config, dialFunc, error) { return o.TLS, dial, nil })
}

func newTransport(addr string, https bool, fallback http.RoundTripper, dialer func() (*tls.Config, dialFunc, error)) (*Transport, error) {
	if addr == "" || fallback == nil {
		return nil, errors.New("inlinehttp: an address and a fallback transport are required")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), "80"
		if https {
			port = "443"
		}
	}
	return &Transport{addr: addr, dialAddr: net.JoinHostPort(host, port), host: host, https: https, fallback: fallback, dialer: dialer}, nil
}

// Wrapper returns a function that puts a Transport for addr over HTTPS in
// front of a client-go base transport (for a rest.Config's
// WrapTransport), with the base as its fallback. Each new connection
// takes the TLS configuration and dialer the base would use at that
// moment (client-go replaces them when a CA or client certificate file
// changes). A base that is not an http.Transport underneath, or that
// reaches addr through a proxy, is returned as it is.
func Wrapper(addr string) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		current := func() (*http.Transport, bool) {
			rt := base
			for {
				switch v := rt.(type) {
				case *http.Transport:
					return v, v.TLSClientConfig != nil && v.DialContext != nil && !proxied(v, addr)
				case utilnet.RoundTripperWrapper:
					rt = v.WrappedRoundTripper()
				default:
					return nil, false
				}
			}
		}
		if _, ok := current(); !ok {
			return base
		}
		t, err := newTransport(addr, true, base, func() (*tls.Config, dialFunc, error) {
			ht, ok := current()
			if !ok {
				return nil, nil, fmt.Errorf("inlinehttp: the base transport for %s changed", addr)
			}
			return ht.TLSClientConfig, ht.DialContext, nil
		})
		if err != nil {
			return base
		}
		return t
	}
}

// proxied says whether ht reaches addr through a proxy.
func proxied(ht *http.Transport, addr string) bool {
	if ht.Proxy == nil {
		return false
	}
	u, err := ht.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: addr}})
	return err != nil || u != nil
}

// conn is one connection to the server with its buffers.
type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	reused   bool
	idleFrom time.Time
}

// handles says whether t carries r itself: a GET or HEAD without a body
// for t's server over the scheme t speaks.
func (t *Transport) handles(r *http.Request) bool {
	scheme := "http"
	if t.https {
		scheme = "https"
	}
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.Body == nil || r.Body == http.NoBody) && r.ContentLength == 0 &&
		r.URL.Scheme == scheme && r.URL.Host == t.addr && r.Header.Get("Upgrade") == ""
}

// RoundTrip sends r and returns the server's response, whose body the
// caller must read and close as with any transport.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.handles(r) || !validHeaders(r.Header) {
		// Invalid headers go to the fallback, which refuses them as
		// net/http does (Request.Write would drop or mend them).
		return t.fallback.RoundTrip(r)
	}
	ctx := r.Context()
	if err := ctx.Err(); err != nil {
		return nil, err // before a kept connection is taken, and dropped
	}
	for attempt := 0; ; attempt++ {
		c, err := t.get(ctx, attempt > 0)
		var unverified *tls.CertificateVerificationError
		if errors.As(err, &unverified) {
			// The server's certificate does not verify with the TLS
			// configuration this transport took from the fallback: the
			// fallback may hold a newer one (client-go reloads a rotated
			// CA file when a request goes through it).
			return t.fallback.RoundTrip(r)
		}
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, r)
		if err == nil && resp.StatusCode == http.StatusRequestTimeout && c.reused && attempt == 0 {
			// A server, or a proxy in front of it, that drops an idle
			// kept connection may first write a 408 on it
			// (golang/go#32310): that is not the answer to r. r (a GET
			// or HEAD, safe to repeat) goes again on a fresh connection.
			// net/http's Transport drops such a 408 when it arrives on an
			// idle connection; here nothing reads one until it is used,
			// so a genuine 408 to r on a kept connection is repeated too,
			// once.
			if b, ok := resp.Body.(*body); ok {
				b.keep = false
			}
			_ = resp.Body.Close()
			continue
		}
		if err == nil {
			return resp, nil
		}
		_ = c.nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A kept connection may have been closed by the server while it
		// was idle: the request goes again, once, on a fresh connection,
		// if nothing of a response arrived. Any other failure is the
		// answer.
		var unanswered errUnanswered
		if !c.reused || attempt > 0 || !errors.As(err, &unanswered) || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, err
		}
	}
}

// errUnanswered is a failure of a request on a connection before any
// byte of a response arrived.
type errUnanswered struct{ error }

func (e errUnanswered) Unwrap() error { return e.error }

// validHeaders says whether every header name and value of h may be sent
// as it is.
func validHeaders(h http.Header) bool {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// exchange writes r on c and reads the response's head. The response's
// body, read by the caller, gives c back when it is done.
func (t *Transport) exchange(ctx context.Context, c *conn, r *http.Request) (*http.Response, error) {
	deadline, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A cancelled request unblocks whatever c is waiting for.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	if err := r.Write(c.bw); err != nil {
		stop()
		return nil, errUnanswered{err}
	}
	if err := c.bw.Flush(); err != nil {
		stop()
		return nil, errUnanswered{err}
	}
	if _, err := c.br.Peek(1); err != nil {
		stop()
		return nil, errUnanswered{err}
	}
	resp, err := readFinalResponse(c.br, r)
	if err != nil {
		stop()
		return nil, err
	}
	// A response without a body (HEAD, 204, 304) is at its end already.
	resp.Body = &body{ReadCloser: resp.Body, t: t, c: c, stop: stop, keep: !resp.Close && !r.Close, eof: resp.Body == http.NoBody}
	return resp, nil
}

// maxInformational bounds the informational (1xx) responses read before
// the final one.
const maxInformational = 8

// readFinalResponse reads the response to r from br, past the
// informational (1xx) responses before it, as net/http's Transport does.
// A 101 Switching Protocols is an error: r asked for no upgrade.
func readFinalResponse(br *bufio.Reader, r *http.Request) (*http.Response, error) {
	for range maxInformational {
		resp, err := http.ReadResponse(br, r)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("inlinehttp: the server switched protocols on a request without an upgrade")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, nil
	}
	return nil, fmt.Errorf("inlinehttp: more than %d informational responses", maxInformational)
}

// body is a response body that gives its connection back to the
// transport once read to the end and closed, and closes it otherwise.
type body struct {
	io.ReadCloser
	t    *Transport
	c    *conn
	stop func() bool
	keep bool
	eof  bool
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("inlinehttp: read on a closed body")
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof || !b.keep {
		// Closed before its end (the caller gave up on it), or the
		// server closes the connection: the connection goes first, so
		// that closing the body does not read the rest of it.
		_ = b.c.nc.Close()
		b.stop()
		_ = b.ReadCloser.Close()
		return nil
	}
	err := b.ReadCloser.Close()
	// stop reports false when the request was cancelled: c's deadline
	// was then moved to the past.
	if b.stop() && err == nil && b.c.br.Buffered() == 0 {
		b.t.put(b.c)
		return nil
	}
	_ = b.c.nc.Close()
	return err
}

// get returns an idle connection to the server, unless fresh, or dials a
// new one.
func (t *Transport) get(ctx context.Context, fresh bool) (*conn, error) {
	now := time.Now()
	var kept *conn
	var expired []*conn
	t.mu.Lock()
	for !fresh && kept == nil && len(t.idle) > 0 {
		c := t.idle[len(t.idle)-1]
		t.idle = t.idle[:len(t.idle)-1]
		if now.Sub(c.idleFrom) < idleTimeout {
			kept = c
		} else {
			expired = append(expired, c)
		}
	}
	t.mu.Unlock()
	for _, c := range expired {
		_ = c.nc.Close()
	}
	if kept != nil {
		kept.reused = true
		return kept, nil
	}
	tlsConfig, dial, err := t.dialer()
	if err != nil {
		return nil, err
	}
	nc, err := dial(ctx, "tcp", t.dialAddr)
	if err != nil {
		return nil, err
	}
	if t.https {
		cfg := &tls.Config{}
		if tlsConfig != nil {
			cfg = tlsConfig.Clone()
		}
		cfg.NextProtos = []string{"http/1.1"}
		if cfg.ServerName == "" {
			cfg.ServerName = t.host
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("inlinehttp: TLS handshake with %s took longer than %s", t.dialAddr, handshakeTimeout)
			}
			return nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			_ = nc.Close()
			return nil, fmt.Errorf("inlinehttp: server %s chose protocol %q", t.addr, p)
		}
		nc = tc
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 4<<10)}, nil
}

// put keeps c for the next request, or closes it when enough are kept.
func (t *Transport) put(c *conn) {
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		_ = c.nc.Close()
		return
	}
	c.idleFrom = time.Now()
	t.mu.Lock()
	// The oldest come first: those idle for too long are closed here
	// rather than left until a burst reaches them.
	n := 0
	for n < len(t.idle) && c.idleFrom.Sub(t.idle[n].idleFrom) >= idleTimeout {
		n++
	}
	expired := slices.Clone(t.idle[:n])
	t.idle = slices.Delete(t.idle, 0, n)
	if len(t.idle) < maxIdle {
		t.idle = append(t.idle, c)
		c = nil
	}
	t.mu.Unlock()
	for _, e := range expired {
		_ = e.nc.Close()
	}
	if c != nil {
		_ = c.nc.Close()
	}
}

// CloseIdleConnections closes the kept connections and the fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close()
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
