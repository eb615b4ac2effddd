package interpreter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/config/interpreters"
)

// FuzzShippedInterpreters feeds arbitrary objects (as the member copy, the
// host object and a member list) to every operation of every shipped
// interpreter: none may panic, and none may hit the cost budget on an
// object of fuzzing size (an expression that did would be one a user's
// object could slow down).
func FuzzShippedInterpreters(f *testing.F) {
	all, err := interpreters.All()
	if err != nil {
		f.Fatal(err)
	}
	var compiled []*Interpreter
	for _, wi := range all {
		in, errs := Compile(&wi.Spec, Options{})
		if len(errs) > 0 {
			f.Fatalf("%s: %v", wi.Name, errs.ToAggregate())
		}
		compiled = append(compiled, in)
	}
	for _, seed := range []string{
		`{}`,
		`{"spec":{"replicas":3,"selector":{"matchLabels":{"a":"b"}}},"status":{"replicas":3,"readyReplicas":"x","phase":7}}`,
		`{"metadata":{"generation":2},"status":{"observedGeneration":"2","conditions":[{"type":"Available","status":"True"},{"type":1}]}}`,
		`{"spec":{"replicas":-1,"template":{"spec":{"volumes":[{"configMap":{"name":"c"}}]}}},"status":null}`,
		`{"status":{"replicas":1.5,"updateRevision":["a"],"currentRevision":{"x":1},"message":"","startTime":3}}`,
		`{"spec":"x","status":[1,2,3]}`,
	} {
		f.Add([]byte(seed), []byte(`{"status":{"replicas":2}}`))
	}
	f.Fuzz(func(t *testing.T, copyJSON, otherJSON []byte) {
		live, ok := object(copyJSON)
		if !ok {
			return
		}
		other, _ := object(otherJSON)
		members := []Member{{Cluster: "a", Object: live, Current: true}, {Cluster: "b"}}
		if other != nil {
			members = append(members, Member{Cluster: "c", Object: other})
		}
		now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		for _, in := range compiled {
			check := func(what string, err error) {
				if err != nil && strings.Contains(err.Error(), "cost limit") {
					t.Fatalf("%s %s on %s: %v", in.Kind(), what, copyJSON, err)
				}
			}
			in.Replicas(live)
			in.Selector(live)
			in.Observed(live)
			_, _, err := in.ReadyReplicas(live)
			check("readyReplicas", err)
			_, _, err = in.Pods(live)
			check("pods", err)
			_, err = in.Health(live)
			check("health", err)
			_, err = in.Followers(live)
			check("followers", err)
			tmpl := live.DeepCopy()
			_, err = in.AggregateStatus(tmpl, members, now)
			check("status", err)
			if in.HasReplicas() {
				_ = in.SetReplicas(tmpl, 2)
			}
			if in.GovernsRollouts() {
				in.RolloutBudget(live)
				in.RolloutPaused(live)
				in.RolloutCounts(live) // must not panic or run away
				_ = in.SetRolloutPaused(tmpl)
				_ = in.SetRolloutShare(tmpl, 1, 1)
			}
		}
	})
}

// object decodes a JSON object, false for anything else.
func object(raw []byte) (*unstructured.Unstructured, bool) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	// Numbers as the apiserver's decoder gives them: int64 when whole.
	return &unstructured.Unstructured{Object: normalise(m).(map[string]any)}, true
}
