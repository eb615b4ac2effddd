// Command scheduler-webhook is an example external scheduler plugin for
// Flotilla, to be registered as a SchedulerPluginWebhook (see README.md).
//
// It serves two extension points:
//
//   - POST /filter rejects the clusters carrying the --reject-label label
//     ("key=value", or "key" for any value) with the reason "rejected by
//     example webhook";
//   - POST /score scores each cluster by its example.com/score label, an
//     integer from 0 to 100 (50 when the label is missing or invalid);
//
// and GET /healthz for probes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/webhook"
)

const (
	// scoreLabel is the cluster label /score reads.
	scoreLabel = "example.com/score"
	// defaultScore is the score of clusters without a valid scoreLabel.
	defaultScore = 50
	// rejectReason is the reason /filter gives.
	rejectReason = "rejected by example webhook"
	// maxRequestBytes bounds a request body.
	maxRequestBytes = 16 << 20
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	reject := flag.String("reject-label", "example.com/scheduling=reject", `clusters with this label ("key=value", or "key" for any value) are filtered out`)
	certFile := flag.String("tls-cert-file", "", "serving certificate (PEM); serves plain HTTP when unset")
	keyFile := flag.String("tls-key-file", "", "serving certificate's private key (PEM)")
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(*addr, *reject, *certFile, *keyFile, log); err != nil {
		log.Error("Exiting", "err", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM.
func run(addr, reject, certFile, keyFile string, log *slog.Logger) error {
	if (certFile == "") != (keyFile == "") {
		return errors.New("set both --tls-cert-file and --tls-key-file, or neither")
	}
	h, err := newHandler(reject, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() {
		log.Info("Serving", "addr", addr, "tls", certFile != "", "rejectLabel", reject)
		if certFile != "" {
			errc <- srv.ListenAndServeTLS(certFile, keyFile)
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// handler serves the example webhook.
type handler struct {
	rejectKey, rejectValue string
	anyValue               bool // reject whatever the label's value
	log                    *slog.Logger
}

// newHandler returns the webhook's routes; reject is "key=value" or "key".
func newHandler(reject string, log *slog.Logger) (http.Handler, error) {
	key, value, hasValue := strings.Cut(reject, "=")
	if key == "" {
		return nil, fmt.Errorf("--reject-label %q: want key=value or key", reject)
	}
	h := &handler{rejectKey: key, rejectValue: value, anyValue: !hasValue, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", h.filter)
	mux.HandleFunc("POST /score", h.score)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux, nil
}

// rejects reports whether a cluster's labels carry the reject label.
func (h *handler) rejects(labels map[string]string) bool {
	v, ok := labels[h.rejectKey]
	return ok && (h.anyValue || v == h.rejectValue)
}

func (h *handler) filter(w http.ResponseWriter, r *http.Request) {
	req, ok := h.decode(w, r, webhook.KindFilterRequest)
	if !ok {
		return
	}
	resp := webhook.FilterResponse{
		TypeInfo: webhook.TypeInfo{APIVersion: webhook.APIVersion, Kind: webhook.KindFilterResponse},
		Results:  make([]webhook.FilterResult, 0, len(req.Clusters)),
	}
	rejected := 0
	for _, c := range req.Clusters {
		res := webhook.FilterResult{Cluster: c.Name, Allowed: true}
		if h.rejects(c.Labels) {
			res.Allowed, res.Reason = false, rejectReason
			rejected++
		}
		resp.Results = append(resp.Results, res)
	}
	h.log.Info("Filtered", "unit", req.Unit.Key, "clusters", len(req.Clusters), "rejected", rejected)
	h.reply(w, resp)
}

func (h *handler) score(w http.ResponseWriter, r *http.Request) {
	req, ok := h.decode(w, r, webhook.KindScoreRequest)
	if !ok {
		return
	}
	resp := webhook.ScoreResponse{
		TypeInfo: webhook.TypeInfo{APIVersion: webhook.APIVersion, Kind: webhook.KindScoreResponse},
		Scores:   make([]webhook.ClusterScore, 0, len(req.Clusters)),
	}
	for _, c := range req.Clusters {
		resp.Scores = append(resp.Scores, webhook.ClusterScore{Cluster: c.Name, Score: h.scoreOf(c)})
	}
	h.log.Info("Scored", "unit", req.Unit.Key, "clusters", len(req.Clusters))
	h.reply(w, resp)
}

// scoreOf reads a cluster's score label.
func (h *handler) scoreOf(c webhook.Cluster) int64 {
	v, ok := c.Labels[scoreLabel]
	if !ok {
		return defaultScore
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > webhook.MaxScore {
		h.log.Warn("Ignoring invalid score label", "cluster", c.Name, "label", scoreLabel, "value", v)
		return defaultScore
	}
	return n
}

// decode reads a request of the given kind; on failure it answers 400 and
// returns false.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, kind string) (*webhook.Request, bool) {
	var req webhook.Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&req); err != nil {
		h.fail(w, fmt.Sprintf("decoding request: %v", err))
		return nil, false
	}
	if req.APIVersion != webhook.APIVersion || req.Kind != kind {
		h.fail(w, fmt.Sprintf("got %s %s, want %s %s", req.APIVersion, req.Kind, webhook.APIVersion, kind))
		return nil, false
	}
	return &req, true
}

func (h *handler) fail(w http.ResponseWriter, msg string) {
	h.log.Warn("Bad request", "err", msg)
	http.Error(w, msg, http.StatusBadRequest)
}

func (h *handler) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Warn("Writing response", "err", err)
	}
}
