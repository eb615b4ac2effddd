package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/webhook"
)

func newServer(t *testing.T, reject string) *httptest.Server {
	t.Helper()
	h, err := newHandler(reject, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func request(kind string, clusters ...webhook.Cluster) webhook.Request {
	return webhook.Request{TypeInfo: webhook.TypeInfo{APIVersion: webhook.APIVersion, Kind: kind}, Unit: webhook.Unit{Key: "default/web"}, Clusters: clusters}
}

func TestFilter(t *testing.T) {
	srv := newServer(t, "example.com/scheduling=reject")
	resp := post(t, srv.URL+"/filter", request(webhook.KindFilterRequest,
		webhook.Cluster{Name: "a"},
		webhook.Cluster{Name: "b", Labels: map[string]string{"example.com/scheduling": "reject"}},
		webhook.Cluster{Name: "c", Labels: map[string]string{"example.com/scheduling": "allow"}},
	))
	var got webhook.FilterResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	want := webhook.FilterResponse{
		TypeInfo: webhook.TypeInfo{APIVersion: webhook.APIVersion, Kind: webhook.KindFilterResponse},
		Results: []webhook.FilterResult{
			{Cluster: "a", Allowed: true},
			{Cluster: "b", Reason: "rejected by example webhook"},
			{Cluster: "c", Allowed: true},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestFilterAnyValue(t *testing.T) {
	h := &handler{rejectKey: "maintenance", anyValue: true}
	if !h.rejects(map[string]string{"maintenance": ""}) || h.rejects(map[string]string{"other": "x"}) {
		t.Error("a key-only reject label must match the key whatever its value, and only it")
	}
	if _, err := newHandler("=x", slog.Default()); err == nil {
		t.Error("newHandler accepted an empty key")
	}
}

func TestScore(t *testing.T) {
	srv := newServer(t, "example.com/scheduling=reject")
	score := func(v string) webhook.Cluster {
		return webhook.Cluster{Name: "s" + v, Labels: map[string]string{scoreLabel: v}}
	}
	resp := post(t, srv.URL+"/score", request(webhook.KindScoreRequest,
		webhook.Cluster{Name: "none"}, score("0"), score("80"), score("100"), score("101"), score("-1"), score("high"),
	))
	var got webhook.ScoreResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	want := []webhook.ClusterScore{
		{Cluster: "none", Score: 50}, {Cluster: "s0", Score: 0}, {Cluster: "s80", Score: 80}, {Cluster: "s100", Score: 100},
		{Cluster: "s101", Score: 50}, {Cluster: "s-1", Score: 50}, {Cluster: "shigh", Score: 50},
	}
	if diff := cmp.Diff(want, got.Scores); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestBadRequests(t *testing.T) {
	srv := newServer(t, "example.com/scheduling=reject")
	if resp := post(t, srv.URL+"/filter", request(webhook.KindScoreRequest)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a ScoreRequest on /filter got %d, want 400", resp.StatusCode)
	}
	resp, err := http.Post(srv.URL+"/score", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed JSON got %d, want 400", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/filter")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /filter got %d, want 405", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz got %d, want 200", resp.StatusCode)
	}
}

// TestWithPlugin drives the example through Flotilla's webhook plugin.
func TestWithPlugin(t *testing.T) {
	srv := newServer(t, "example.com/scheduling=reject")
	p, err := webhook.New("example", v1alpha1.SchedulerPluginWebhookSpec{
		URL:   srv.URL,
		Paths: v1alpha1.WebhookPaths{Filter: "/filter", Score: "/score"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mc := func(name string, labels map[string]string) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	clusters := []*v1alpha1.MemberCluster{
		mc("a", map[string]string{scoreLabel: "90"}),
		mc("b", map[string]string{"example.com/scheduling": "reject"}),
	}
	u := &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{}}
	statuses, err := p.FilterAll(context.Background(), u, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if statuses[0] != nil || statuses[1] == nil || statuses[1].Reason != "rejected by example webhook" {
		t.Errorf("statuses = %+v, %+v", statuses[0], statuses[1])
	}
	scores, err := p.ScoreAll(context.Background(), u, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{90, 50}, scores); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}
