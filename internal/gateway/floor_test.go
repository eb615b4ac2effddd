package gateway_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"

	"github.com/flotilla-io/flotilla/internal/inlinehttp"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// bareProxyEnv, set in the environment of this test binary, makes it a
// bare reverse proxy instead of running tests (see serveBareProxy).
const bareProxyEnv = "FLOTILLA_BENCH_BARE_PROXY"

// serveBareProxy is the floor BenchmarkPassThrough compares the gateway
// with: TLS and HTTP/1.1 in front of the host, every request forwarded as
// it came (the client's own token), no authentication, authorization,
// audit or limits. Its arguments come in the environment as "host URL,
// host CA file, listen address, file to write its certificate to,
// transport to the host": net/http's ("std") or the one the gateway uses
// for gets and lists ("inline", internal/inlinehttp).
func serveBareProxy() error {
	var hostURL, caFile, addr, certFile, transport string
	if _, err := fmt.Sscan(os.Getenv(bareProxyEnv), &hostURL, &caFile, &addr, &certFile, &transport); err != nil {
		return fmt.Errorf("%s: %w", bareProxyEnv, err)
	}
	host, err := url.Parse(hostURL)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return err
	}
	p := httputil.NewSingleHostReverseProxy(host)
	p.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 100}
	if transport == "inline" {
		it, err := inlinehttp.New(inlinehttp.Options{Addr: host.Host, TLS: &tls.Config{RootCAs: roots}, Fallback: p.Transport})
		if err != nil {
			return err
		}
		p.Transport = it
	}
	return (&http.Server{Handler: p, ReadHeaderTimeout: time.Minute}).Serve(ln)
}

// startBareProxy runs this test binary as serveBareProxy with transport
// in front of env's host and returns a client configuration for it without
// credentials.
func startBareProxy(b *testing.B, env *testenv.Environment, transport string) *rest.Config {
	b.Helper()
	dir := b.TempDir()
	caFile, certFile := filepath.Join(dir, "host-ca.crt"), filepath.Join(dir, "proxy.crt")
	if err := os.WriteFile(caFile, env.Host.Config.CAData, 0o600); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s %s", bareProxyEnv, env.Host.Config.Host, caFile, addr, certFile, transport))
	out, err := os.Create(filepath.Join(dir, "proxy.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = out.Close() })
	cfg := &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{CAFile: certFile}}
	testenv.Eventually(b, 30*time.Second, "the bare proxy answers (log: "+out.Name()+")", func(ctx context.Context) error {
		if _, err := os.Stat(certFile); err != nil {
			return err
		}
		c := rest.CopyConfig(cfg)
		c.BearerToken = env.Host.Config.BearerToken
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return err
		}
		_, err = cs.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx)
		return err
	})
	return cfg
}
