// Command etcd is a minimal single-member etcd server built on the etcd
// server's embed package. It serves one cluster of the local Flotilla
// environment on loopback, without TLS, and stops cleanly on SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	name := flag.String("name", "default", "member name")
	dataDir := flag.String("data-dir", "", "directory for the data (required)")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:2379", "URL to serve clients on")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:2380", "URL to serve peers on")
	quota := flag.Int64("quota-backend-bytes", 2<<30, "backend size quota in bytes")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}
	cfg, err := newConfig(*name, *dataDir, *clientURL, *peerURL, *quota)
	if err != nil {
		log.Fatal(err)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd %s ready, serving clients on %s", *name, *clientURL)
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd did not become ready within 60s")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("received %s, stopping", s)
		e.Close()
	case err := <-e.Err():
		log.Fatalf("etcd failed: %v", err)
	}
}

func newConfig(name, dataDir, clientURL, peerURL string, quota int64) (*embed.Config, error) {
	cu, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("parse --listen-client-url: %w", err)
	}
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, fmt.Errorf("parse --listen-peer-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", name, peerURL)
	cfg.QuotaBackendBytes = quota
	cfg.LogLevel = "warn"
	// The local environment is disposable: trade durability for speed.
	cfg.UnsafeNoFsync = true
	return cfg, nil
}
