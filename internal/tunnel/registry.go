package tunnel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Protocol is the Upgrade token of a tunnel request.
const Protocol = "flotilla-tunnel/1"

// Subresource is the MemberCluster subresource an agent opens its tunnel
// on; Path(cluster) is its URL path.
const Subresource = "tunnel"

// Path is the URL path an agent opens cluster's tunnel at.
func Path(cluster string) string {
	return "/apis/flotilla.io/v1alpha1/memberclusters/" + cluster + "/" + Subresource
}

// ErrNoTunnel is returned by a dial while the member's agent has no
// tunnel open (wrapped with the member's name).
var ErrNoTunnel = errors.New("the member's agent has no tunnel open to this gateway")

// Registry holds the open tunnels by member, on the gateway.
type Registry struct {
	// changed is called (in its own goroutine) after a member's tunnel
	// opened or closed.
	changed func(cluster string)

	mu       sync.Mutex
	sessions map[string]*Session
	seq      uint64
}

// Session is one open tunnel.
type Session struct {
	// Cluster is the member whose agent opened it.
	Cluster string
	// Seq tells sessions apart: each new one has a higher number.
	Seq uint64
	// Agent is the user that opened it, as the gateway authenticated it.
	Agent string
	// Opened is when it opened.
	Opened time.Time

	mux *yamux.Session
}

// NewRegistry returns an empty registry; changed (may be nil) is told of
// each member whose tunnel opened or closed.
func NewRegistry(changed func(cluster string)) *Registry {
	if changed == nil {
		changed = func(string) {}
	}
	return &Registry{changed: changed, sessions: map[string]*Session{}}
}

// IsUpgrade reports whether r asks for a tunnel.
func IsUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && strings.EqualFold(r.Header.Get("Upgrade"), Protocol)
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// Accept takes over the connection of r (an authorized tunnel request of
// cluster's agent, user agent) and makes it cluster's tunnel, replacing
// (and closing) any tunnel the member had. The tunnel lives until the
// agent closes it, the connection breaks, ctx ends, or check (run every
// checkEvery, if not nil) returns an error: the gateway re-authorizes the
// agent with it, so that revoking the agent's rights closes its tunnel.
func (g *Registry) Accept(ctx context.Context, w http.ResponseWriter, r *http.Request, cluster, agent string, checkEvery time.Duration, check func(context.Context) error) error {
	if !IsUpgrade(r) {
		return fmt.Errorf("a tunnel request must ask to upgrade to %s", Protocol)
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errors.New("the connection cannot be taken over (a tunnel needs HTTP/1.1)")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return fmt.Errorf("take over the connection: %w", err)
	}
	if _, err := fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", Protocol); err == nil {
		err = rw.Flush()
	}
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("answer the upgrade: %w", err)
	}
	logger := klog.FromContext(ctx).WithValues("cluster", cluster, "agent", agent)
	mux, err := yamux.Client(bufferedConn{Conn: conn, r: rw.Reader}, muxConfig(logger))
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("start the tunnel session: %w", err)
	}
	g.mu.Lock()
	g.seq++
	s := &Session{Cluster: cluster, Seq: g.seq, Agent: agent, Opened: time.Now(), mux: mux}
	old := g.sessions[cluster]
	g.sessions[cluster] = s
	g.mu.Unlock()
	if old != nil {
		logger.Info("Agent opened a new tunnel: closing the old one", "old", old.Seq)
		_ = old.mux.Close()
	}
	logger.Info("Agent tunnel open", "session", s.Seq, "remote", conn.RemoteAddr().String())
	go g.changed(cluster)
	go g.watch(ctx, s, logger, checkEvery, check)
	return nil
}

// watch ends s when its session, ctx or check does, and forgets it.
func (g *Registry) watch(ctx context.Context, s *Session, logger klog.Logger, every time.Duration, check func(context.Context) error) {
	var tick <-chan time.Time
	if check != nil && every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	why := "the agent closed it or the connection broke"
loop:
	for {
		select {
		case <-s.mux.CloseChan():
			break loop
		case <-ctx.Done():
			why = "the gateway is stopping"
			break loop
		case <-tick:
			if err := check(ctx); err != nil {
				why = err.Error()
				break loop
			}
		}
	}
	_ = s.mux.Close()
	g.mu.Lock()
	current := g.sessions[s.Cluster] == s
	if current {
		delete(g.sessions, s.Cluster)
	}
	g.mu.Unlock()
	logger.Info("Agent tunnel closed", "session", s.Seq, "reason", why)
	if current {
		g.changed(s.Cluster)
	}
}

// Current returns cluster's open tunnel.
func (g *Registry) Current(cluster string) (*Session, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.sessions[cluster]
	return s, ok
}

// Config returns a client configuration that reaches the member's
// apiserver through s: plain HTTP over a tunnel stream per connection,
// without credentials (the agent adds its own). A dial fails once s has
// closed; a new tunnel needs a new Config.
func (s *Session) Config() *rest.Config {
	return &rest.Config{
		Host: "http://" + s.Cluster + ".tunnel.flotilla.io",
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return s.dial(ctx)
		},
	}
}

// dial opens a stream, giving up when ctx ends.
func (s *Session) dial(ctx context.Context) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := s.mux.Open()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			if s.mux.IsClosed() {
				return nil, fmt.Errorf("member %s: %w (its tunnel %d closed)", s.Cluster, ErrNoTunnel, s.Seq)
			}
			return nil, fmt.Errorf("member %s: open a tunnel stream: %w", s.Cluster, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// CloseAll closes every tunnel (the gateway is stopping).
func (g *Registry) CloseAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.sessions {
		_ = s.mux.Close()
	}
}

// bufferedConn reads first what the HTTP server had buffered past the
// request.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// muxConfig is the session configuration of both ends: keepalives find a
// dead connection within a minute, and a stream's window holds a large
// list chunk.
func muxConfig(logger klog.Logger) *yamux.Config {
	c := yamux.DefaultConfig()
	c.KeepAliveInterval = 20 * time.Second
	c.ConnectionWriteTimeout = 20 * time.Second
	c.MaxStreamWindowSize = 1 << 20
	c.LogOutput = nil
	c.Logger = muxLogger{logger}
	return c
}

// muxLogger hands yamux's messages to klog at verbosity 2.
type muxLogger struct{ l klog.Logger }

func (m muxLogger) Print(v ...any) { m.l.V(2).Info("Tunnel session", "msg", fmt.Sprint(v...)) }
func (m muxLogger) Printf(format string, v ...any) {
	m.l.V(2).Info("Tunnel session", "msg", fmt.Sprintf(format, v...))
}
func (m muxLogger) Println(v ...any) { m.l.V(2).Info("Tunnel session", "msg", fmt.Sprint(v...)) }
