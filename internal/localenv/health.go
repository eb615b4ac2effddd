package localenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flotilla-io/flotilla/internal/poll"
)

// prober checks component health endpoints on loopback. The endpoints are
// our own processes; kube-controller-manager and kube-scheduler serve
// self-signed certificates, so certificates are not verified here (the
// apiserver's is verified by every client built from its kubeconfig).
type prober struct {
	client *http.Client
	token  string
}

func newProber(token string) *prober {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probes of our own processes
		DisableKeepAlives: true,
	}
	return &prober{client: &http.Client{Transport: tr, Timeout: 2 * time.Second}, token: token}
}

// probe returns nil when url answers 200.
func (p *prober) probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if p.token != "" && strings.HasPrefix(url, "https://") {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, lastLines(string(body), 3))
	}
	return nil
}

// waitFor polls check until it returns nil or the timeout passes, giving up
// early when stop reports a reason (a crashed process). On timeout the last
// observation is part of the error.
func waitFor(ctx context.Context, what string, timeout time.Duration, stop func() error, check func(context.Context) error) error {
	var stopped error
	err := poll.Until(ctx, timeout, func(ctx context.Context) error {
		if stopped = stop(); stopped != nil {
			return nil
		}
		return check(ctx)
	})
	switch {
	case stopped != nil:
		return fmt.Errorf("waiting for %s: %w", what, stopped)
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("%s not ready after %s: last seen: %v", what, timeout, err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
