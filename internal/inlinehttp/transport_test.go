package inlinehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// server is a TLS test server that counts the connections it accepted.
type server struct {
	*httptest.Server
	conns atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// countingFallback counts the requests it carries.
type countingFallback struct {
	rt http.RoundTripper
	n  atomic.Int32
}

func (c *countingFallback) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

func testTransport(t *testing.T, s *server) (*Transport, *countingFallback) {
	t.Helper()
	base := s.Client().Transport.(*http.Transport)
	fb := &countingFallback{rt: base}
	tr, err := New(Options{Addr: strings.TrimPrefix(s.URL, "https://"), TLS: base.TLSClientConfig, Fallback: fb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, fb
}

func do(t *testing.T, rt http.RoundTripper, ctx context.Context, method, url string, body io.Reader) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestGetsShareOneConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			for i := range 3 {
				_, _ = fmt.Fprintf(w, "part%d;", i)
				w.(http.Flusher).Flush()
			}
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, "final")
		case "/missing":
			http.NotFound(w, r)
		default:
			_, _ = fmt.Fprintf(w, "%s %s?%s", r.Method, r.URL.Path, r.URL.RawQuery)
		}
	})
	tr, fb := testTransport(t, s)
	ctx := context.Background()
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/api/v1/namespaces?limit=5", 200, "GET /api/v1/namespaces?limit=5"},
		{"GET", "/chunked", 200, "part0;part1;part2;"},
		{"HEAD", "/x", 200, ""},
		{"GET", "/hints", 200, "final"},
		{"GET", "/missing", 404, "404 page not found\n"},
		{"GET", "/again", 200, "GET /again?"},
	} {
		code, body, err := do(t, tr, ctx, tc.method, s.URL+tc.path, nil)
		if err != nil || code != tc.code || body != tc.body {
			t.Errorf("%s %s = %d %q, %v; want %d %q", tc.method, tc.path, code, body, err, tc.code, tc.body)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("server saw %d connections, want 1", n)
	}
	if n := fb.n.Load(); n != 0 {
		t.Errorf("fallback carried %d requests, want 0", n)
	}
}

func TestOtherRequestsGoToTheFallback(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s %s", r.Method, b)
	})
	tr, fb := testTransport(t, s)
	ctx := context.Background()
	for _, tc := range []struct {
		method, url, body, want string
	}{
		{"PATCH", s.URL + "/x", "{}", "PATCH {}"},
		{"POST", s.URL + "/x", "data", "POST data"},
		{"DELETE", s.URL + "/x", "", "DELETE "},
		{"GET", s.URL + "/x", "a body", "GET a body"},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		if _, got, err := do(t, tr, ctx, tc.method, tc.url, body); err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.method, got, err, tc.want)
		}
	}
	// An upgrade is not this transport's either (net/http hands back the
	// 101 and the connection).
	up, _ := http.NewRequest("GET", s.URL+"/x", nil)
	up.Header.Set("Connection", "Upgrade")
	up.Header.Set("Upgrade", "SPDY/3.1")
	if resp, err := tr.RoundTrip(up); err == nil {
		_ = resp.Body.Close()
	}
	if n := fb.n.Load(); n != 5 {
		t.Errorf("fallback carried %d requests, want 5", n)
	}
	// Another server's request is not this transport's either.
	other := newServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "other") })
	tr2, err := New(Options{Addr: "127.0.0.1:1", Fallback: other.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := do(t, tr2, ctx, "GET", other.URL, nil); err != nil || got != "other" {
		t.Errorf("GET another server = %q, %v; want it through the fallback", got, err)
	}
}

func TestAConnectionTheServerClosedIsReplaced(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	tr, _ := testTransport(t, s)
	ctx := context.Background()
	if _, got, err := do(t, tr, ctx, "GET", s.URL, nil); err != nil || got != "ok" {
		t.Fatalf("first GET = %q, %v", got, err)
	}
	s.CloseClientConnections()
	if _, got, err := do(t, tr, ctx, "GET", s.URL, nil); err != nil || got != "ok" {
		t.Fatalf("GET after the server closed the kept connection = %q, %v; want it sent again on a new one", got, err)
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
}

// A load balancer that drops an idle kept connection may write a 408 on
// it first (golang/go#32310). The next GET on that connection reads the
// 408: it is sent again on a fresh connection, not answered with it.
func TestA408OnAKeptConnectionIsNotTheAnswer(t *testing.T) {
	var calls atomic.Int32
	go408, wrote408, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(done) })
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) > 1 {
			_, _ = io.WriteString(w, "ok")
			return
		}
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		_ = rw.Flush()
		<-go408
		_, _ = rw.WriteString("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
		_ = rw.Flush()
		close(wrote408)
		<-done
	})
	tr, _ := testTransport(t, s)
	ctx := context.Background()
	if _, got, err := do(t, tr, ctx, "GET", s.URL, nil); err != nil || got != "ok" {
		t.Fatalf("first GET = %q, %v", got, err)
	}
	close(go408)
	<-wrote408
	code, got, err := do(t, tr, ctx, "GET", s.URL, nil)
	if err != nil || code != http.StatusOK || got != "ok" {
		t.Fatalf("GET on the connection the server wrote a 408 on = %d %q, %v; want 200 ok from a new connection", code, got, err)
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
}

func TestAFreshConnectionsFailureIsReturned(t *testing.T) {
	var calls atomic.Int32
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = c.Close()
		}
	})
	tr, _ := testTransport(t, s)
	if _, _, err := do(t, tr, context.Background(), "GET", s.URL, nil); err == nil {
		t.Fatal("GET to a server that hangs up succeeded")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("server saw the request %d times, want 1 (a fresh connection is not retried)", n)
	}
}

func TestACancelledRequestReturnsAndItsConnectionIsDropped(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	reached := make(chan struct{}, 1)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			reached <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tr, _ := testTransport(t, s)
	if _, _, err := do(t, tr, context.Background(), "GET", s.URL+"/fast", nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := do(t, tr, ctx, "GET", s.URL+"/slow", nil)
		done <- err
	}()
	select { // cancelled while it waits for the answer
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request did not reach the server within 10 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled GET returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled GET did not return within 10 s")
	}
	once.Do(func() { close(release) })
	before := s.conns.Load()
	if _, got, err := do(t, tr, context.Background(), "GET", s.URL+"/fast", nil); err != nil || got != "ok" {
		t.Fatalf("GET after a cancelled one = %q, %v", got, err)
	}
	if n := s.conns.Load(); n != before+1 {
		t.Errorf("server saw %d new connections after the cancelled GET, want 1 (its connection is not kept)", n-before)
	}
}

// A request cancelled before it is sent does not take (and so drop) a
// kept connection.
func TestARequestCancelledBeforeItIsSentKeepsTheConnection(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	tr, _ := testTransport(t, s)
	if _, _, err := do(t, tr, context.Background(), "GET", s.URL, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := do(t, tr, ctx, "GET", s.URL, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("GET with a cancelled context returned %v, want context.Canceled", err)
	}
	if _, got, err := do(t, tr, context.Background(), "GET", s.URL, nil); err != nil || got != "ok" {
		t.Fatalf("GET after the cancelled one = %q, %v", got, err)
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("server saw %d connections, want 1 (the kept one stays)", n)
	}
}

func TestABodyClosedEarlyDropsItsConnection(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
		if r.URL.Path == "/endless" {
			w.(http.Flusher).Flush()
			select { // the rest never comes
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tr, _ := testTransport(t, s)
	for _, path := range []string{"/whole", "/endless"} {
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { _ = resp.Body.Close(); close(closed) }()
		select { // closing does not wait for the rest of the body
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("closing the body of %s early did not return within 10 s", path)
		}
	}
	once.Do(func() { close(release) })
	if _, got, err := do(t, tr, context.Background(), "GET", s.URL+"/whole", nil); err != nil || len(got) != 64<<10 {
		t.Fatalf("next GET = %d bytes, %v", len(got), err)
	}
	if n := s.conns.Load(); n != 3 {
		t.Errorf("server saw %d connections, want 3 (a body closed before its end drops its connection)", n)
	}
}

func TestConnectionCloseIsHonoured(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "ok")
	})
	tr, _ := testTransport(t, s)
	for range 2 {
		if _, got, err := do(t, tr, context.Background(), "GET", s.URL, nil); err != nil || got != "ok" {
			t.Fatalf("GET = %q, %v", got, err)
		}
	}
	if n := s.conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2 (Connection: close is not reused)", n)
	}
}

func TestInvalidHeadersAreRefusedAsNetHTTPDoes(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("Impersonate-User"))
	})
	tr, fb := testTransport(t, s)
	req, _ := http.NewRequest("GET", s.URL, nil)
	req.Header.Set("Impersonate-User", "admin\n")
	if resp, err := tr.RoundTrip(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("a header value with a newline was sent (the server saw %q); want it refused", b)
	}
	if n := fb.n.Load(); n != 1 {
		t.Errorf("fallback carried %d requests, want 1 (it refuses the header)", n)
	}
}

func TestAnUnverifiedServerGoesToTheFallback(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr := strings.TrimPrefix(s.URL, "https://")
	untrusting := &tls.Config{RootCAs: x509.NewCertPool()}
	// The fallback trusts the server (client-go's, after it reloaded a
	// rotated CA): the request goes through it.
	trusting := &countingFallback{rt: s.Client().Transport}
	tr, err := New(Options{Addr: addr, TLS: untrusting, Fallback: trusting})
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := do(t, tr, context.Background(), "GET", s.URL, nil); err != nil || got != "ok" || trusting.n.Load() != 1 {
		t.Fatalf("GET = %q, %v, fallback requests %d; want ok through the fallback", got, err, trusting.n.Load())
	}
	// Neither trusts it: the verification error is the answer.
	tr, err = New(Options{Addr: addr, TLS: untrusting, Fallback: &http.Transport{TLSClientConfig: untrusting}})
	if err != nil {
		t.Fatal(err)
	}
	var unverified *tls.CertificateVerificationError
	if _, _, err := do(t, tr, context.Background(), "GET", s.URL, nil); !errors.As(err, &unverified) {
		t.Fatalf("GET to an untrusted server: %v; want a certificate verification error", err)
	}
}

func TestNewNeedsAnAddressAndAFallback(t *testing.T) {
	for _, o := range []Options{{}, {Addr: "a:1"}, {Fallback: http.DefaultTransport}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
	tr, err := New(Options{Addr: "example.com", Fallback: http.DefaultTransport})
	if err != nil {
		t.Fatal(err)
	}
	if tr.dialAddr != "example.com:80" {
		t.Errorf("New without a port: dial address %q; want example.com:80", tr.dialAddr)
	}
}

func TestWrapperUnderClientGo(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s %s", r.Header.Get("Authorization"), r.URL.Path)
	})
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	addr := strings.TrimPrefix(s.URL, "https://")
	for _, tc := range []struct {
		name   string
		proxy  func(*http.Request) (*url.URL, error)
		inline bool
	}{
		{"direct", nil, true},
		{"through a proxy", func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.1:1") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wrapped http.RoundTripper
			cfg := &rest.Config{Host: s.URL, BearerToken: "secret", Proxy: tc.proxy, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
			cfg.Wrap(func(base http.RoundTripper) http.RoundTripper {
				wrapped = Wrapper(addr)(base)
				return wrapped
			})
			rt, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := wrapped.(*Transport); ok != tc.inline {
				t.Fatalf("Wrapper gave %T, inline %v; want inline %v", wrapped, ok, tc.inline)
			}
			if !tc.inline {
				return
			}
			before := s.conns.Load()
			for range 3 {
				if _, got, err := do(t, rt, context.Background(), "GET", s.URL+"/api", nil); err != nil || got != "Bearer secret /api" {
					t.Fatalf("GET = %q, %v; want the token and the path", got, err)
				}
			}
			if n := s.conns.Load() - before; n != 1 {
				t.Errorf("server saw %d new connections, want 1", n)
			}
		})
	}
}
