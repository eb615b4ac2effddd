package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/yamux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Client keeps a member's tunnel open from its agent: it dials the
// gateway, asks for the tunnel, serves the gateway's requests with
// Handler, and dials again (with a growing pause, up to MaxBackoff) when
// the tunnel closes.
type Client struct {
	// Gateway is the gateway's URL (https://host:port).
	Gateway *url.URL
	// Cluster is the member's name on the hub.
	Cluster string
	// TLS is the TLS configuration to the gateway: its CA, and the
	// agent's client certificate when it has one.
	TLS *tls.Config
	// Wrap adds the agent's hub credentials (a bearer token) and user
	// agent to the tunnel request; nil adds nothing.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Handler serves the requests that come through the tunnel
	// (MemberHandler).
	Handler http.Handler
	// MaxBackoff caps the pause between attempts (default 15s).
	MaxBackoff time.Duration
	// Opened, if not nil, is called each time a tunnel opens.
	Opened func()
}

// Run keeps the tunnel open until ctx ends.
func (c *Client) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("gateway", c.Gateway.String(), "cluster", c.Cluster)
	maxBackoff := c.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = 15 * time.Second
	}
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 64, Cap: maxBackoff}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		opened := time.Now()
		err := c.serveOnce(ctx, logger)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(opened) > time.Minute {
			backoff = newBackoff()
		}
		pause := backoff.Step()
		logger.Info("Gateway tunnel down: dialling again", "err", err, "in", pause.Round(time.Millisecond))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}

// serveOnce opens a tunnel and serves it until it closes.
func (c *Client) serveOnce(ctx context.Context, logger klog.Logger) error {
	conn, err := c.Open(ctx)
	if err != nil {
		return err
	}
	mux, err := yamux.Server(conn, muxConfig(logger))
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("start the tunnel session: %w", err)
	}
	logger.Info("Gateway tunnel open")
	if c.Opened != nil {
		c.Opened()
	}
	srv := &http.Server{Handler: c.Handler, ReadHeaderTimeout: 30 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	stop := context.AfterFunc(ctx, func() { _ = mux.Close() })
	defer stop()
	err = srv.Serve(mux)
	_ = mux.Close()
	_ = srv.Close()
	if errors.Is(err, yamux.ErrSessionShutdown) || errors.Is(err, http.ErrServerClosed) {
		return errors.New("the tunnel closed")
	}
	return err
}

// Open dials the gateway once and asks for the tunnel: it returns the
// connection the tunnel's session runs on, or why the gateway refused.
func (c *Client) Open(ctx context.Context) (net.Conn, error) {
	up := &upgrader{tls: c.TLS}
	var rt http.RoundTripper = up
	if c.Wrap != nil {
		rt = c.Wrap(up)
	}
	u := *c.Gateway
	u.Path = Path(c.Cluster)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", Protocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("dial the gateway: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer func() { _ = resp.Body.Close() }()
		_ = up.close()
		return nil, refusal(resp)
	}
	return up.conn, nil
}

// refusal reads why the gateway did not open the tunnel.
func refusal(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return fmt.Errorf("the gateway refused the tunnel: %d %s", resp.StatusCode, st.Message)
	}
	return fmt.Errorf("the gateway refused the tunnel: %s %q", resp.Status, string(body))
}

// upgrader is a round tripper for one upgrade request over HTTP/1.1: on
// 101 it keeps the connection.
type upgrader struct {
	tls  *tls.Config
	conn net.Conn
}

func (u *upgrader) RoundTrip(req *http.Request) (*http.Response, error) {
	cfg := u.tls.Clone()
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// The upgrade needs HTTP/1.1: HTTP/2 has no connection to take over.
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName = req.URL.Hostname()
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "443")
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, Config: cfg}
	conn, err := d.DialContext(req.Context(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The request and its answer must not outlive ctx; the tunnel itself
	// has keepalives.
	if dl, ok := req.Context().Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	u.conn = bufferedConn{Conn: conn, r: br}
	return resp, nil
}

func (u *upgrader) close() error {
	if u.conn == nil {
		return nil
	}
	return u.conn.Close()
}
