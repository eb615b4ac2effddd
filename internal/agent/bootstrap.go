package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	ctrl "sigs.k8s.io/controller-runtime"
)

// certificateHub starts the agent's certificate loop and waits until it
// holds a certificate (serving the probes meanwhile: alive, not ready),
// then returns the hub configuration that presents it.
func certificateHub(ctx context.Context, o Options) (*rest.Config, error) {
	logger := ctrl.LoggerFrom(ctx)
	var store certStore = &memStore{}
	if o.CertDir != "" {
		fs, err := certificate.NewFileStore("flotilla-agent", o.CertDir, o.CertDir, "", "")
		if err != nil {
			return nil, fmt.Errorf("certificate directory %s: %w", o.CertDir, err)
		}
		store = fs
	}
	src := newCertSource(o.Cluster, o.Bootstrap, store, o.CertificateLifetime)
	hub, err := src.restConfig(o.Bootstrap)
	if err != nil {
		return nil, err
	}
	go src.run(ctx)
	if c, _ := src.current(); c != nil {
		logger.Info("Using the stored agent certificate", "dir", o.CertDir, "notAfter", c.Leaf.NotAfter.UTC())
		return hub, nil
	}
	stop, err := serveWaitingProbes(o.ProbeAddr, src.waitingFor)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := src.wait(ctx); err != nil {
		return nil, err
	}
	return hub, nil
}

// serveWaitingProbes answers /healthz (ok) and /readyz (not yet, with
// what waiting says) while the agent waits for its certificate, so that a
// kubelet neither restarts it nor sends it traffic and an operator sees
// why; the returned function frees the address for the manager's probes.
func serveWaitingProbes(addr string, waiting func() string) (func(), error) {
	if addr == "" || addr == "0" {
		return func() {}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, waiting(), http.StatusServiceUnavailable)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve probes on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ctrl.Log.Error(err, "Serving the probes while waiting for the certificate")
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
