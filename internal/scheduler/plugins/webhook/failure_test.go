package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// fixed answers every request with status and body.
func fixed(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// hanging starts a webhook that holds every request until the caller
// gives up (or the test ends), counting them in calls.
func hanging(t *testing.T) (srv *httptest.Server, calls chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	calls = make(chan struct{}, 10)
	srv = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case calls <- struct{}{}:
		default:
		}
		select { // hold the request until the plugin gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv, calls
}

func TestTimeout(t *testing.T) {
	srv, _ := hanging(t)
	p := newPlugin(t, srv, nil)
	p.timeout = 200 * time.Millisecond

	_, err := p.FilterAll(context.Background(), unit(1), members(2))
	want := "filter: POST " + srv.URL + "/filter: context deadline exceeded"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

// TestCoolDownAfterATimeout: after a call timed out, the webhook is not
// called again for coolDown: calls fail at once (so a hung webhook does
// not hold a worker for its timeout at each point of each decision), and
// an answer with an error does not start one.
func TestCoolDownAfterATimeout(t *testing.T) {
	srv, calls := hanging(t)
	p := newPlugin(t, srv, nil)
	p.timeout = 200 * time.Millisecond

	if _, err := p.FilterAll(context.Background(), unit(1), members(2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first call: %v, want a timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.ScoreAll(ctx, unit(1), members(2))
	if !errors.Is(err, errCoolingDown) {
		t.Errorf("a call within the cool-down: %v, want errCoolingDown", err)
	}
	if n := len(calls); n != 1 {
		t.Errorf("the webhook was called %d times, want 1", n)
	}
	// Once the cool-down is over it is called again.
	p.down.Store(time.Now().Add(-time.Second).UnixNano())
	if _, err := p.FilterAll(context.Background(), unit(1), members(2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call after the cool-down: %v, want a timeout", err)
	}

	// A webhook that answers, even with an error, is not cooled down.
	bad := httptest.NewServer(fixed(http.StatusInternalServerError, "boom"))
	defer bad.Close()
	q := newPlugin(t, bad, nil)
	for range 2 {
		if _, err := q.FilterAll(context.Background(), unit(1), members(2)); err == nil || errors.Is(err, errCoolingDown) {
			t.Errorf("a webhook answering 500: %v, want its HTTP error", err)
		}
	}
}

func TestHTTPError(t *testing.T) {
	body := "boom\n" + strings.Repeat("x", 300)
	srv := httptest.NewServer(fixed(http.StatusInternalServerError, body))
	defer srv.Close()
	p := newPlugin(t, srv, nil)

	_, err := p.ScoreAll(context.Background(), unit(1), members(2))
	want := "score: POST " + srv.URL + "/score: HTTP 500: boom " + strings.Repeat("x", 195)
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://elsewhere.example/filter", http.StatusTemporaryRedirect))
	defer srv.Close()
	p := newPlugin(t, srv, nil)
	_, err := p.FilterAll(context.Background(), unit(1), members(1))
	if err == nil || !strings.Contains(err.Error(), "/filter: HTTP 307") {
		t.Errorf("error = %v, want HTTP 307", err)
	}
}

func TestBadResponses(t *testing.T) {
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"malformed", "/filter", `{"results": [`, "decoding response: unexpected end of JSON input"},
		{"not JSON", "/filter", `<html>`, "decoding response: invalid character '<'"},
		{"trailing data", "/filter", `{"results": []} {}`, "decoding response: invalid character '{' after top-level value"},
		{"missing cluster", "/filter", `{"results": [{"cluster": "member-0", "allowed": true}]}`, "response lacks cluster member-1"},
		{"missing clusters", "/score", `{"scores": []}`, "response lacks clusters member-0, member-1"},
		{"unknown cluster", "/filter", `{"results": [{"cluster": "member-0", "allowed": true}, {"cluster": "member-1"}, {"cluster": "member-9"}]}`, `response names cluster "member-9", which was not requested`},
		{"duplicate", "/score", `{"scores": [{"cluster": "member-0", "score": 1}, {"cluster": "member-0", "score": 2}]}`, "response names cluster member-0 more than once"},
		{"score too high", "/score", `{"scores": [{"cluster": "member-0", "score": 101}, {"cluster": "member-1", "score": 2}]}`, "score 101 for cluster member-0 is outside 0..100"},
		{"fractional score", "/score", `{"scores": [{"cluster": "member-0", "score": 1.5}]}`, "decoding response: json: cannot unmarshal number 1.5"},
		{"wrong kind", "/score", `{"kind": "FilterResponse", "scores": []}`, `response kind is "FilterResponse", want "ScoreResponse"`},
		{"wrong version", "/filter", `{"apiVersion": "scheduler.flotilla.io/v2", "results": []}`, `response apiVersion is "scheduler.flotilla.io/v2", want "scheduler.flotilla.io/v1alpha1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(fixed(http.StatusOK, tc.body))
			defer srv.Close()
			p := newPlugin(t, srv, nil)
			var err error
			if tc.path == "/filter" {
				_, err = p.FilterAll(context.Background(), unit(1), members(2))
			} else {
				_, err = p.ScoreAll(context.Background(), unit(1), members(2))
			}
			prefix := strings.TrimPrefix(tc.path, "/") + ": POST " + srv.URL + tc.path + ": "
			if err == nil || !strings.HasPrefix(err.Error(), prefix+tc.want) {
				t.Errorf("error = %v, want %q", err, prefix+tc.want)
			}
		})
	}
}

func TestIgnorePolicy(t *testing.T) {
	srv := httptest.NewServer(fixed(http.StatusServiceUnavailable, "overloaded"))
	defer srv.Close()
	p := newPlugin(t, srv, func(s *v1alpha1.SchedulerPluginWebhookSpec) { s.FailurePolicy = v1alpha1.FailurePolicyIgnore })
	_, ctx := ktesting.NewTestContext(t) // the ignored failures are logged to the test
	clusters := members(3)

	statuses, err := p.FilterAll(ctx, unit(3), clusters)
	if err != nil || len(statuses) != 3 || statuses[0] != nil || statuses[1] != nil || statuses[2] != nil {
		t.Errorf("FilterAll = %v, %v; want every cluster allowed", statuses, err)
	}
	scores, err := p.ScoreAll(ctx, unit(3), clusters)
	if err != nil || len(scores) != 3 || scores[0] != 0 || scores[1] != 0 || scores[2] != 0 {
		t.Errorf("ScoreAll = %v, %v; want zeros", scores, err)
	}
	ranked := scored(clusters, 30, 20, 10)
	chosen, st := p.Select(ctx, nil, unit(3), ranked)
	if !st.IsSuccess() || len(chosen) != 3 || chosen[2].Cluster.Name != "member-2" {
		t.Errorf("Select = %v, %+v; want the ranked clusters unchanged", chosen, st)
	}
	if _, st := p.Replicas(ctx, nil, unit(3), ranked); st == nil || st.Code != framework.Error || !strings.Contains(st.Reason, "HTTP 503: overloaded") {
		t.Errorf("Replicas status = %+v, want the error despite Ignore", st)
	}

	// A caller that gave up is told so, not answered as if it had not.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.FilterAll(cancelled, unit(3), clusters); !errors.Is(err, context.Canceled) {
		t.Errorf("FilterAll with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestInProfile runs the plugin through the framework, as profiles use it.
func TestInProfile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		resp := FilterResponse{}
		for _, c := range req.Clusters {
			resp.Results = append(resp.Results, FilterResult{Cluster: c.Name, Allowed: c.Name != "member-1", Reason: "closed for maintenance"})
		}
		reply(w, resp)
	})
	mux.HandleFunc("/replicas", func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		resp := ReplicasResponse{}
		for i, c := range req.Clusters {
			n := int32(0)
			if i == 0 {
				n = *req.Unit.Replicas
			}
			resp.Placement = append(resp.Placement, v1alpha1.ClusterPlacement{Cluster: c.Name, Replicas: &n})
		}
		reply(w, resp)
	})
	mux.HandleFunc("/score", fixed(http.StatusBadGateway, "upstream down"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := newPlugin(t, srv, nil)

	spec := &v1alpha1.SchedulingProfileSpec{Plugins: v1alpha1.ProfilePlugins{
		Filter:   v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: p.Name()}}},
		Replicas: v1alpha1.PluginSet{Enabled: []v1alpha1.PluginRef{{Name: p.Name()}}},
	}}
	external := func(name string) (framework.Plugin, error) {
		if name != p.Name() {
			return nil, errors.New("unknown")
		}
		return p, nil
	}
	profile, err := framework.Build("", spec, framework.Registry{}, framework.Defaults{}, external)
	if err != nil {
		t.Fatal(err)
	}
	res, err := profile.Schedule(context.Background(), unit(4), members(3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Feasible != 2 || res.Excluded["member-1"] != "closed for maintenance" || len(res.Placement) != 2 {
		t.Errorf("result = %+v", res)
	}

	spec.Plugins.Score.Enabled = []v1alpha1.PluginRef{{Name: p.Name()}}
	if profile, err = framework.Build("", spec, framework.Registry{}, framework.Defaults{}, external); err != nil {
		t.Fatal(err)
	}
	_, err = profile.Schedule(context.Background(), unit(4), members(3))
	want := "webhook/ext: score: POST " + srv.URL + "/score: HTTP 502: upstream down"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}
