package member

import (
	"context"
	"io"
	"net/http"
)

// withContext wraps a round tripper so that every request is also cancelled
// when ctx ends, for clients (discovery) whose calls take no context.
func withContext(ctx context.Context, rt http.RoundTripper) http.RoundTripper {
	return &contextRoundTripper{ctx: ctx, rt: rt}
}

type contextRoundTripper struct {
	ctx context.Context
	rt  http.RoundTripper
}

// RoundTrip sends req with a context that ends with either the request's or
// the session's; the derived context lives until the body is closed.
func (c *contextRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(c.ctx, cancel)
	done := func() { stop(); cancel() }
	resp, err := c.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		done()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, done: done}
	return resp, nil
}

// WrappedRoundTripper lets client-go's helpers (closing idle connections)
// reach the transport underneath.
func (c *contextRoundTripper) WrappedRoundTripper() http.RoundTripper { return c.rt }

type cancelOnClose struct {
	io.ReadCloser
	done func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}
