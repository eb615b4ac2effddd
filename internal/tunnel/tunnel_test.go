package tunnel

import (
	"context"
	"errors"
	"io"
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

// seen records what the member behind the tunnel received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func (s *seen) last() (*http.Request, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return nil, 0
	}
	return s.reqs[len(s.reqs)-1], len(s.reqs)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTunnelCarriesOnlyWhatTheGatewayNeeds runs both ends over real TLS
// connections: the agent's requests reach the member with the agent's
// credentials only, what the gateway has no need of is refused without
// reaching the member, and a closed tunnel is dialled again.
func TestTunnelCarriesOnlyWhatTheGatewayNeeds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	got := &seen{}
	memberSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r.Clone(context.Background()))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer memberSrv.Close()
	member := &rest.Config{Host: memberSrv.URL, BearerToken: "agent-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	handler, err := MemberHandler("m1", member, []string{"kube-system", "agents"})
	if err != nil {
		t.Fatal(err)
	}

	var changes atomic.Int32
	reg := NewRegistry(func(string) { changes.Add(1) })
	gatewaySrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path("m1") {
			http.Error(w, "no such member", http.StatusNotFound)
			return
		}
		if err := reg.Accept(ctx, w, r, "m1", "agent-of-m1", 0, nil); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	gatewaySrv.EnableHTTP2 = true
	gatewaySrv.StartTLS()
	defer gatewaySrv.Close()
	gwURL, _ := url.Parse(gatewaySrv.URL)
	tlsCfg := gatewaySrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()

	client := &Client{Gateway: gwURL, Cluster: "m1", TLS: tlsCfg, Handler: handler, MaxBackoff: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- client.Run(ctx) }()
	var s *Session
	waitFor(t, "the tunnel to open", func() (bool, string) {
		var ok bool
		s, ok = reg.Current("m1")
		return ok, "no session"
	})
	if s.Agent != "agent-of-m1" || s.Seq != 1 {
		t.Fatalf("session %+v", s)
	}

	through := &http.Client{Transport: mustTransport(t, s.Config())}
	do := func(method, path string, h http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.Config().Host+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := through.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, body := do("GET", "/api/v1/namespaces/a/pods", http.Header{
		"Authorization":    {"Bearer someone-elses"},
		"Impersonate-User": {"system:admin"}, "Impersonate-Group": {"system:masters"},
		"X-Remote-User": {"root"}, "Accept": {"application/json"},
	})
	if code != http.StatusOK || !strings.Contains(body, "PodList") {
		t.Fatalf("list pods through the tunnel: %d %s", code, body)
	}
	r, n := got.last()
	if n != 1 || r.URL.Path != "/api/v1/namespaces/a/pods" {
		t.Fatalf("the member saw %d requests, last %v", n, r)
	}
	if a := r.Header.Get("Authorization"); a != "Bearer agent-token" {
		t.Errorf("the member saw Authorization %q, want the agent's token", a)
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Impersonate-") || strings.HasPrefix(k, "X-Remote-") {
			t.Errorf("the member saw identity header %s: %v", k, r.Header[k])
		}
	}

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/namespaces/a/secrets"},
		{"POST", "/api/v1/namespaces/a/pods"},
		{"GET", "/api/v1/nodes/n1/proxy/logs"},
		{"POST", "/api/v1/namespaces/kube-system/pods/etcd-0/exec"},
		{"POST", "/api/v1/namespaces/agents/pods/agent-0/portforward"},
	} {
		code, body := do(c.method, c.path, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "the agent of member m1") || !strings.Contains(body, "is not carried") {
			t.Errorf("%s %s: %d %s, want 403 saying the agent does not carry it", c.method, c.path, code, body)
		}
	}
	if _, n := got.last(); n != 1 {
		t.Errorf("refused requests reached the member: it saw %d requests", n)
	}
	if code, _ := do("DELETE", "/api/v1/namespaces/a/pods/p", nil); code != http.StatusOK {
		t.Errorf("delete a pod: %d", code)
	}

	// The gateway closes the tunnel: the dialler of the old session
	// fails, and the agent opens a new one.
	reg.CloseAll()
	waitFor(t, "a new tunnel", func() (bool, string) {
		n, ok := reg.Current("m1")
		if !ok {
			return false, "no session"
		}
		return n.Seq == 2, "session " + n.Cluster
	})
	if _, err := s.Config().Dial(ctx, "tcp", "x:80"); !errors.Is(err, ErrNoTunnel) {
		t.Errorf("dial through the closed tunnel: %v, want ErrNoTunnel", err)
	}
	if c := changes.Load(); c < 2 {
		t.Errorf("the registry told of %d changes, want at least 2 (opened, opened again)", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestRefusalIsReported: the agent sees the gateway's reason.
func TestRefusalIsReported(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"memberclusters.flotilla.io \"m2\" is forbidden: User \"agent\" cannot create resource \"memberclusters/tunnel\"","code":403}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := &Client{Gateway: u, Cluster: "m2", TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
	_, err := c.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), `cannot create resource "memberclusters/tunnel"`) {
		t.Fatalf("Open: %v, want the gateway's 403 message", err)
	}
}

func mustTransport(t *testing.T, cfg *rest.Config) http.RoundTripper {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
