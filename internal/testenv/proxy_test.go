package testenv

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) (string, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return got, err
}

func TestProxy(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "hello"); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}

	p.SetDelay(100 * time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(t, c, r, "slow"); err != nil || got != "slow\n" {
		t.Fatalf("with latency: %q, %v", got, err)
	}
	if rtt := time.Since(start); rtt < 200*time.Millisecond {
		t.Errorf("round trip took %s with 100 ms each way, want at least 200 ms", rtt)
	}
	p.SetDelay(0)

	p.Cut()
	if _, err := roundTrip(t, c, r, "cut"); err == nil {
		t.Fatal("an open connection still works after Cut")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_, err = roundTrip(t, c2, bufio.NewReader(c2), "refused")
		c2.Close()
	}
	if err == nil {
		t.Fatal("a new connection works after Cut")
	}

	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(t, c3, bufio.NewReader(c3), "back"); err != nil || got != "back\n" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
}
