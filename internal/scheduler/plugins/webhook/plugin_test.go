package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// member returns a ready MemberCluster with labels given as k=v pairs.
func member(name string, labels ...string) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		c.Labels[k] = v
	}
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	return c
}

func members(n int) []*v1alpha1.MemberCluster {
	out := make([]*v1alpha1.MemberCluster, n)
	for i := range out {
		out[i] = member("member-" + strconv.Itoa(i))
	}
	return out
}

// unit returns a Deployment unit with replicas divided among clusters.
func unit(replicas int32) *framework.Unit {
	return &framework.Unit{
		Key:       "default/web",
		GVK:       schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: "default",
		Name:      "web",
		Replicas:  ptr.To(replicas),
		Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}},
	}
}

func scored(clusters []*v1alpha1.MemberCluster, scores ...int64) []framework.ScoredCluster {
	out := make([]framework.ScoredCluster, len(clusters))
	for i, c := range clusters {
		out[i] = framework.ScoredCluster{Cluster: c, Score: scores[i]}
	}
	return out
}

// decode reads a request the plugin sent, checking how it was sent.
func decode(t *testing.T, r *http.Request) *Request {
	t.Helper()
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %s with Content-Type %q, want a JSON POST", r.Method, r.Header.Get("Content-Type"))
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		t.Errorf("decoding request: %v", err)
	}
	if req.APIVersion != APIVersion {
		t.Errorf("request apiVersion = %q", req.APIVersion)
	}
	return &req
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// counted wraps h to count requests.
func counted(n *atomic.Int32, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { n.Add(1); h(w, r) }
}

// newPlugin builds a plugin for srv serving every point at /filter,
// /score, /select and /replicas, after edit changes the spec.
func newPlugin(t *testing.T, srv *httptest.Server, edit func(*v1alpha1.SchedulerPluginWebhookSpec)) *Plugin {
	t.Helper()
	spec := v1alpha1.SchedulerPluginWebhookSpec{
		URL:   srv.URL,
		Paths: v1alpha1.WebhookPaths{Filter: "/filter", Score: "/score", Select: "/select", Replicas: "/replicas"},
	}
	if edit != nil {
		edit(&spec)
	}
	p, err := New("ext", spec, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestFilterRejectsByLabel(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		if req.Kind != KindFilterRequest || req.Unit.Key != "default/web" || req.Unit.Kind != "Deployment" ||
			req.Unit.Replicas == nil || *req.Unit.Replicas != 3 || len(req.Unit.Current) != 0 || req.Unit.Current == nil {
			t.Errorf("unexpected request %+v", req)
		}
		resp := FilterResponse{TypeInfo: TypeInfo{APIVersion: APIVersion, Kind: KindFilterResponse}}
		for i := len(req.Clusters) - 1; i >= 0; i-- { // any order will do
			c := req.Clusters[i]
			if !c.Ready {
				t.Errorf("cluster %s sent as not ready", c.Name)
			}
			r := FilterResult{Cluster: c.Name, Allowed: c.Labels["gpu"] != "none"}
			if !r.Allowed && c.Name == "b" {
				r.Reason = "no GPU nodes"
			}
			resp.Results = append(resp.Results, r)
		}
		reply(w, resp)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := newPlugin(t, srv, nil)

	got, err := p.FilterAll(context.Background(), unit(3), []*v1alpha1.MemberCluster{
		member("a", "gpu=a100"), member("b", "gpu=none"), member("c"), member("d", "gpu=none"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []*framework.Status{
		nil,
		{Code: framework.Unschedulable, Reason: "no GPU nodes", Plugin: "webhook/ext"},
		nil,
		{Code: framework.Unschedulable, Reason: "rejected by webhook/ext", Plugin: "webhook/ext"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestScore(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		if r.URL.Path != "/score" || req.Kind != KindScoreRequest {
			t.Errorf("got %s %s", r.URL.Path, req.Kind)
		}
		resp := ScoreResponse{}
		for _, c := range req.Clusters {
			s, _ := strconv.ParseInt(c.Labels["score"], 10, 64)
			resp.Scores = append([]ClusterScore{{Cluster: c.Name, Score: s}}, resp.Scores...)
		}
		reply(w, resp)
	}))
	defer srv.Close()
	p := newPlugin(t, srv, nil)

	got, err := p.ScoreAll(context.Background(), unit(3), []*v1alpha1.MemberCluster{
		member("a", "score=10"), member("b", "score=100"), member("c"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{10, 100, 0}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestSelect(t *testing.T) {
	var choose []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		if req.Kind != KindSelectRequest || req.Scores["b"] != 90 || len(req.Clusters) != 3 || req.Clusters[0].Name != "b" {
			t.Errorf("unexpected request %+v", req)
		}
		reply(w, SelectResponse{Clusters: choose, Reason: "no cluster in the maintenance window"})
	}))
	defer srv.Close()
	p := newPlugin(t, srv, nil)
	ranked := scored([]*v1alpha1.MemberCluster{member("b"), member("a"), member("c")}, 90, 50, 10)

	choose = []string{"c", "b"}
	got, st := p.Select(context.Background(), nil, unit(3), ranked)
	if !st.IsSuccess() {
		t.Fatal(st.Reason)
	}
	if len(got) != 2 || got[0].Cluster.Name != "b" || got[0].Score != 90 || got[1].Cluster.Name != "c" {
		t.Errorf("chosen = %+v, want b then c in ranking order", got)
	}

	choose = []string{}
	_, st = p.Select(context.Background(), nil, unit(3), ranked)
	if st == nil || st.Code != framework.Unschedulable || st.Reason != "no cluster in the maintenance window" {
		t.Errorf("empty selection gave %+v, want Unschedulable with the webhook's reason", st)
	}
}

func TestReplicas(t *testing.T) {
	var placement []v1alpha1.ClusterPlacement
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		if req.Kind != KindReplicasRequest || len(req.Scores) != 3 {
			t.Errorf("unexpected request %+v", req)
		}
		reply(w, ReplicasResponse{Placement: placement})
	}))
	defer srv.Close()
	p := newPlugin(t, srv, nil)
	chosen := scored([]*v1alpha1.MemberCluster{member("c"), member("a"), member("b")}, 90, 50, 10)

	placement = []v1alpha1.ClusterPlacement{{Cluster: "c", Replicas: ptr.To[int32](6)}, {Cluster: "a", Replicas: ptr.To[int32](4)}, {Cluster: "b", Replicas: ptr.To[int32](0)}}
	got, st := p.Replicas(context.Background(), nil, unit(10), chosen)
	if !st.IsSuccess() {
		t.Fatal(st.Reason)
	}
	want := []v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](4)}, {Cluster: "b", Replicas: ptr.To[int32](0)}, {Cluster: "c", Replicas: ptr.To[int32](6)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}

	// A unit that is not divided gets the clusters alone.
	dup := unit(10)
	dup.Placement.ReplicaScheduling.Type = v1alpha1.ReplicaSchedulingDuplicate
	placement = []v1alpha1.ClusterPlacement{{Cluster: "b", Replicas: ptr.To[int32](3)}, {Cluster: "a"}}
	got, st = p.Replicas(context.Background(), nil, dup, chosen)
	if !st.IsSuccess() {
		t.Fatal(st.Reason)
	}
	if diff := cmp.Diff([]v1alpha1.ClusterPlacement{{Cluster: "a"}, {Cluster: "b"}}, got); diff != "" {
		t.Errorf("placement (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		placement []v1alpha1.ClusterPlacement
		want      string
	}{
		{[]v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](4)}, {Cluster: "c", Replicas: ptr.To[int32](5)}}, "replicas sum to 9, want 10"},
		{[]v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](11)}, {Cluster: "c", Replicas: ptr.To[int32](-1)}}, "replicas -1 for cluster c are negative"},
		{[]v1alpha1.ClusterPlacement{{Cluster: "a"}}, "response gives no replicas for cluster a of a Divide unit"},
		{[]v1alpha1.ClusterPlacement{{Cluster: "z", Replicas: ptr.To[int32](10)}}, `response names cluster "z", which was not requested`},
		{[]v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](5)}, {Cluster: "a", Replicas: ptr.To[int32](5)}}, "response names cluster a more than once"},
	} {
		placement = tc.placement
		_, st := p.Replicas(context.Background(), nil, unit(10), chosen)
		if st == nil || st.Code != framework.Error || !strings.HasSuffix(st.Reason, "/replicas: "+tc.want) {
			t.Errorf("placement %v gave %+v, want an error ending %q", tc.placement, st, tc.want)
		}
	}
}

func TestOneRequestPerPoint(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(counted(&n, func(w http.ResponseWriter, r *http.Request) {
		req := decode(t, r)
		switch req.Kind {
		case KindFilterRequest:
			resp := FilterResponse{}
			for _, c := range req.Clusters {
				resp.Results = append(resp.Results, FilterResult{Cluster: c.Name, Allowed: true})
			}
			reply(w, resp)
		case KindScoreRequest:
			resp := ScoreResponse{}
			for _, c := range req.Clusters {
				resp.Scores = append(resp.Scores, ClusterScore{Cluster: c.Name, Score: 7})
			}
			reply(w, resp)
		}
	}))
	defer srv.Close()
	p := newPlugin(t, srv, nil)
	clusters := members(100)

	statuses, err := p.FilterAll(context.Background(), unit(3), clusters)
	if err != nil || len(statuses) != 100 {
		t.Fatalf("FilterAll: %d statuses, %v", len(statuses), err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("filtering 100 clusters made %d requests, want 1", got)
	}
	if _, err := p.ScoreAll(context.Background(), unit(3), clusters); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("filtering then scoring made %d requests, want 2", got)
	}
	// No candidates: no request.
	if _, err := p.FilterAll(context.Background(), unit(3), nil); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("filtering no cluster made a request")
	}
}

func TestUnconfiguredPoint(t *testing.T) {
	p, err := New("ext", v1alpha1.SchedulerPluginWebhookSpec{URL: "https://ext.example:8443", Paths: v1alpha1.WebhookPaths{Filter: "/filter"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, s, sel, r := p.Points(); !f || s || sel || r {
		t.Errorf("Points() = %v %v %v %v, want filter only", f, s, sel, r)
	}
	if p.Name() != "webhook/ext" {
		t.Errorf("Name() = %q", p.Name())
	}
	if _, err := p.ScoreAll(context.Background(), unit(1), members(1)); err == nil || err.Error() != "webhook ext has no score path" {
		t.Errorf("ScoreAll error = %v", err)
	}
	if _, st := p.Select(context.Background(), nil, unit(1), nil); st == nil || st.Code != framework.Error || st.Reason != "webhook ext has no select path" {
		t.Errorf("Select status = %+v", st)
	}
	if _, st := p.Replicas(context.Background(), nil, unit(1), nil); st == nil || st.Code != framework.Error || st.Reason != "webhook ext has no replicas path" {
		t.Errorf("Replicas status = %+v", st)
	}
}
