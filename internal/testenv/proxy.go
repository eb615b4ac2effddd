package testenv

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections on a loopback port to a target address
// byte for byte, so TLS passes through and a server certificate valid for
// 127.0.0.1 stays valid. It injects network faults: latency (SetDelay) and
// an outage (Cut, Restore).
type Proxy struct {
	l        net.Listener
	target   string
	delay    atomic.Int64 // one-way latency in nanoseconds
	cut      atomic.Bool
	accepted atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards to target
// ("127.0.0.1:6443") until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address ("127.0.0.1:port").
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// SetDelay adds d of latency to every chunk of data in each direction, on
// open and new connections (0 removes it). Chunks keep their order and are
// pipelined: the delay is latency, not a bandwidth limit.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Accepted counts the connections forwarded so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Cut closes every open connection and refuses new ones (accepted, then
// closed at once) until Restore.
func (p *Proxy) Cut() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Restore accepts connections again after Cut.
func (p *Proxy) Restore() { p.cut.Store(false) }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.l.Close()
	p.wg.Wait()
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.cut.Load() {
			c.Close()
			continue
		}
		p.accepted.Add(1)
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Go(func() {
			var pair sync.WaitGroup
			pair.Go(func() { p.pipe(up, c) })
			pair.Go(func() { p.pipe(c, up) })
			pair.Wait()
			p.untrack(c, up)
		})
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// chunk is data read at a time, to be written delay later.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delayed by the current latency, and
// closes both when either side ends.
func (p *Proxy) pipe(dst, src net.Conn) {
	queue := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range queue {
			if wait := time.Until(ch.due); wait > 0 {
				time.Sleep(wait) // the injected latency itself
			}
			if _, err := dst.Write(ch.data); err != nil {
				src.Close()
				for range queue { // drain so that the reader never blocks
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			queue <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(time.Duration(p.delay.Load()))}
		}
		if err != nil { // EOF, a reset or a Cut: the pipe ends
			break
		}
	}
	close(queue)
	<-done
	dst.Close()
	src.Close()
}
