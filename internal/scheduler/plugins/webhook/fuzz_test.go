package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// fuzzReply is the response the fuzz server sends: the fuzz function sets
// it before each call.
type fuzzReply struct {
	mu     sync.Mutex
	status int
	body   []byte
}

func (r *fuzzReply) set(status int, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.body = status, body
}

func (r *fuzzReply) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	status, body := r.status, r.body
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fuzzStatuses are the HTTP statuses the fuzz server answers with.
var fuzzStatuses = []int{http.StatusOK, http.StatusOK, http.StatusOK, http.StatusNoContent, http.StatusFound, http.StatusInternalServerError}

// maxFuzzReason bounds any reason the plugin returns: a webhook's answer
// must not turn into an unbounded condition message or event.
const maxFuzzReason = 4096

// FuzzResponse sends arbitrary response bodies (and statuses) to every
// extension point. Whatever the webhook answers, the plugin does not
// panic and returns either an error or a valid result: one verdict or
// score (0..100) per cluster, a selection that is a non-empty subset of
// the ranked clusters in their order, a placement on requested clusters
// only, each once, whose replicas sum to the unit's for a Divide unit.
// Unknown cluster names are errors; under failurePolicy Ignore the filter,
// score and select points never fail. Reasons are valid UTF-8 and bounded.
func FuzzResponse(f *testing.F) {
	reply := &fuzzReply{status: http.StatusOK}
	srv := httptest.NewServer(reply)
	f.Cleanup(srv.Close)
	plugins := map[bool]*Plugin{}
	for _, ignore := range []bool{false, true} {
		spec := v1alpha1.SchedulerPluginWebhookSpec{
			URL:   srv.URL,
			Paths: v1alpha1.WebhookPaths{Filter: "/filter", Score: "/score", Select: "/select", Replicas: "/replicas"},
		}
		if ignore {
			spec.FailurePolicy = v1alpha1.FailurePolicyIgnore
		}
		p, err := New("fuzz", spec, nil)
		if err != nil {
			f.Fatalf("New: %v", err)
		}
		f.Cleanup(p.Close)
		plugins[ignore] = p
	}

	seeds := []struct {
		point point
		body  string
	}{
		{filterPoint, `{"apiVersion":"scheduler.flotilla.io/v1alpha1","kind":"FilterResponse","results":[{"cluster":"c","allowed":true},{"cluster":"b","allowed":false,"reason":"no GPU nodes"},{"cluster":"a","allowed":false}]}`},
		{filterPoint, `{"results":[{"cluster":"a","allowed":true},{"cluster":"a","allowed":true},{"cluster":"b","allowed":true}]}`},
		{filterPoint, `{"results":[{"cluster":"a","allowed":true},{"cluster":"b","allowed":true}]}`},
		{filterPoint, `{"results":[{"cluster":"a","allowed":true},{"cluster":"b","allowed":true},{"cluster":"c","allowed":true},{"cluster":"zz","allowed":true}]}`},
		{filterPoint, `{"kind":"ScoreResponse","results":[]}`},
		{scorePoint, `{"kind":"ScoreResponse","scores":[{"cluster":"a","score":100},{"cluster":"b","score":0},{"cluster":"c","score":42}]}`},
		{scorePoint, `{"scores":[{"cluster":"a","score":101},{"cluster":"b","score":-1},{"cluster":"c","score":9223372036854775807}]}`},
		{scorePoint, `{"apiVersion":"v2","scores":null}`},
		{selectPoint, `{"kind":"SelectResponse","clusters":["c","a"]}`},
		{selectPoint, `{"clusters":[],"reason":"no budget"}`},
		{selectPoint, `{"clusters":["a","unknown"]}`},
		{selectPoint, `{"clusters":["b","b"]}`},
		{replicasPoint, `{"kind":"ReplicasResponse","placement":[{"cluster":"b","replicas":3},{"cluster":"a","replicas":2}]}`},
		{replicasPoint, `{"placement":[{"cluster":"a","replicas":6},{"cluster":"b","replicas":-1}]}`},
		{replicasPoint, `{"placement":[{"cluster":"a"},{"cluster":"c","replicas":5}]}`},
		{replicasPoint, `{"placement":[],"reason":"` + "\xff\xfe" + `quota"}`},
		{replicasPoint, `{"placement":[{"cluster":"x","replicas":5}]}`},
		{replicasPoint, `{"placement":[{"cluster":"a","replicas":2147483647},{"cluster":"b","replicas":2147483647},{"cluster":"c","replicas":-2147483644}]}`},
		{replicasPoint, `not json`},
		{filterPoint, ``},
		{scorePoint, `null`},
	}
	for i, s := range seeds {
		f.Add(uint8(s.point), uint8(i%3), i%2 == 0, i%5 == 0, []byte(s.body))
	}
	long := strings.Repeat("x", 2*maxFuzzReason)
	f.Add(uint8(selectPoint), uint8(0), false, false, []byte(`{"clusters":["`+long+`"]}`))
	f.Add(uint8(scorePoint), uint8(0), false, false, []byte(`{"scores":[{"cluster":"`+long+`","score":101}]}`))
	f.Add(uint8(replicasPoint), uint8(0), true, false, []byte(`{"placement":[{"cluster":"`+long+`"}]}`))
	f.Add(uint8(filterPoint), uint8(5), false, false, []byte(`internal error`))
	f.Add(uint8(selectPoint), uint8(4), false, true, []byte(`moved`))

	clusters := []*v1alpha1.MemberCluster{fuzzCluster("a"), fuzzCluster("b"), fuzzCluster("c")}
	ranked := make([]framework.ScoredCluster, len(clusters))
	for i, c := range clusters {
		ranked[i] = framework.ScoredCluster{Cluster: c, Score: int64(100 - i)}
	}
	f.Fuzz(func(t *testing.T, pt, status uint8, divide, ignore bool, body []byte) {
		reply.set(fuzzStatuses[int(status)%len(fuzzStatuses)], body)
		p := plugins[ignore]
		u := fuzzUnit(divide)
		ctx := klog.NewContext(context.Background(), klog.Logger{}) // discards: failurePolicy Ignore logs each failure
		switch point(pt % uint8(numPoints)) {
		case filterPoint:
			statuses, err := p.FilterAll(ctx, u, clusters)
			if err != nil {
				checkReason(t, err.Error())
				if ignore {
					t.Fatalf("FilterAll failed under failurePolicy Ignore: %v", err)
				}
				return
			}
			if len(statuses) != len(clusters) {
				t.Fatalf("FilterAll returned %d statuses for %d clusters", len(statuses), len(clusters))
			}
			for _, s := range statuses {
				if s != nil {
					checkStatus(t, p, s, framework.Unschedulable)
				}
			}
		case scorePoint:
			scores, err := p.ScoreAll(ctx, u, clusters)
			if err != nil {
				checkReason(t, err.Error())
				if ignore {
					t.Fatalf("ScoreAll failed under failurePolicy Ignore: %v", err)
				}
				return
			}
			if len(scores) != len(clusters) {
				t.Fatalf("ScoreAll returned %d scores for %d clusters", len(scores), len(clusters))
			}
			for i, s := range scores {
				if s < 0 || s > MaxScore {
					t.Fatalf("ScoreAll gave cluster %s the score %d", clusters[i].Name, s)
				}
			}
		case selectPoint:
			chosen, st := p.Select(ctx, nil, u, ranked)
			if st != nil {
				if ignore && st.Code != framework.Unschedulable {
					t.Fatalf("Select failed under failurePolicy Ignore: %+v", st)
				}
				checkStatus(t, p, st, framework.Unschedulable, framework.Error)
				return
			}
			if len(chosen) == 0 {
				t.Fatalf("Select chose no cluster without saying why")
			}
			last := -1
			for _, c := range chosen {
				i := slices.IndexFunc(ranked, func(r framework.ScoredCluster) bool { return r.Cluster == c.Cluster })
				if i <= last {
					t.Fatalf("Select returned %v: not a subset of the ranked clusters in their order", names(chosen))
				}
				last = i
			}
		case replicasPoint:
			placement, st := p.Replicas(ctx, nil, u, ranked)
			if st != nil {
				checkStatus(t, p, st, framework.Unschedulable, framework.Error)
				return
			}
			var sum int64
			for i, e := range placement {
				if !slices.ContainsFunc(clusters, func(c *v1alpha1.MemberCluster) bool { return c.Name == e.Cluster }) {
					t.Fatalf("Replicas placed the unknown cluster %q", e.Cluster)
				}
				if i > 0 && placement[i-1].Cluster >= e.Cluster {
					t.Fatalf("Replicas returned clusters not sorted or repeated: %+v", placement)
				}
				switch {
				case !divide && e.Replicas != nil:
					t.Fatalf("Replicas gave replicas for a unit that is not divided: %+v", placement)
				case divide && (e.Replicas == nil || *e.Replicas < 0):
					t.Fatalf("Replicas gave cluster %s no or negative replicas: %+v", e.Cluster, placement)
				case divide:
					sum += int64(*e.Replicas)
				}
			}
			if divide && sum != int64(*u.Replicas) {
				t.Fatalf("Replicas placed %d replicas of %d", sum, *u.Replicas)
			}
		}
	})
}

// checkStatus fails unless s has one of the codes, names the plugin when
// it is a verdict, and has a valid reason.
func checkStatus(t *testing.T, p *Plugin, s *framework.Status, codes ...framework.Code) {
	t.Helper()
	if !slices.Contains(codes, s.Code) {
		t.Fatalf("status %+v has an unexpected code", s)
	}
	if s.Code == framework.Unschedulable && s.Plugin != p.Name() {
		t.Fatalf("status %+v does not name the plugin", s)
	}
	if s.Reason == "" {
		t.Fatalf("status %+v has no reason", s)
	}
	checkReason(t, s.Reason)
}

// checkReason fails unless a reason is valid UTF-8 and bounded.
func checkReason(t *testing.T, reason string) {
	t.Helper()
	if !utf8.ValidString(reason) || len(reason) > maxFuzzReason {
		t.Fatalf("reason of %d bytes (valid UTF-8: %v): %.300q", len(reason), utf8.ValidString(reason), reason)
	}
}

// names returns the names of scored clusters.
func names(scored []framework.ScoredCluster) []string {
	out := make([]string, len(scored))
	for i, s := range scored {
		out[i] = s.Cluster.Name
	}
	return out
}

// fuzzCluster returns a ready MemberCluster.
func fuzzCluster(name string) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	return c
}

// fuzzUnit returns a Deployment unit of 5 replicas, divided or duplicated.
func fuzzUnit(divide bool) *framework.Unit {
	replicas := int32(5)
	mode := v1alpha1.ReplicaSchedulingDuplicate
	if divide {
		mode = v1alpha1.ReplicaSchedulingDivide
	}
	return &framework.Unit{
		Key:       "default/web",
		GVK:       schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: "default",
		Name:      "web",
		Replicas:  &replicas,
		Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: mode}},
	}
}
