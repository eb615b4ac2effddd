package workload

import (
	"cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// fuzzKinds are the kinds the fuzz targets build objects of: every kind
// with a known pod spec or status, a workload CRD and a kind with neither.
var fuzzKinds = []struct{ apiVersion, kind string }{
	{"apps/v1", "Deployment"},
	{"apps/v1", "StatefulSet"},
	{"apps/v1", "DaemonSet"},
	{"apps/v1", "ReplicaSet"},
	{"batch/v1", "Job"},
	{"batch/v1", "CronJob"},
	{"v1", "Pod"},
	{"v1", "ReplicationController"},
	{"v1", "Service"},
	{"extensions/v1beta1", "Deployment"},
	{"example.com/v1", "Widget"},
	{"v1", "ConfigMap"},
}

// fuzzObject builds an object of fuzzKinds[kind] whose field at path is
// value (no field when value is nil).
func fuzzObject(kind uint8, generation int64, value any, path ...string) *unstructured.Unstructured {
	k := fuzzKinds[int(kind)%len(fuzzKinds)]
	obj := map[string]any{
		"apiVersion": k.apiVersion,
		"kind":       k.kind,
		"metadata":   map[string]any{"name": "web", "namespace": "shop", "generation": generation},
	}
	if value != nil && len(path) > 0 {
		m := obj
		for _, p := range path[:len(path)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[path[len(path)-1]] = value
	}
	return &unstructured.Unstructured{Object: obj}
}

// decodeJSON decodes fuzz bytes the way objects read from the apiserver
// are decoded (integers as int64).
func decodeJSON(data []byte) (any, bool) {
	var v any
	if err := k8sjson.Unmarshal(data, &v); err != nil {
		return nil, false
	}
	return v, true
}

// FuzzFollowers extracts followers from arbitrary pod specs (and, for the
// last kind index, arbitrary whole objects): it never panics, never
// changes its input, and returns references sorted by kind then name,
// without duplicates, of the four follower kinds, whose names all appear
// as strings in the input, never the default ServiceAccount.
func FuzzFollowers(f *testing.F) {
	specs := []string{
		`{"serviceAccountName":"web-sa","imagePullSecrets":[{"name":"registry"},{"name":"registry"}],
		  "volumes":[{"name":"a","configMap":{"name":"cm-volume"}},{"name":"b","secret":{"secretName":"secret-volume"}},
		    {"name":"c","persistentVolumeClaim":{"claimName":"data"}},
		    {"name":"d","projected":{"sources":[{"configMap":{"name":"cm-projected"}},{"secret":{"name":"secret-projected"}},{"serviceAccountToken":{"path":"token"}}]}},
		    {"name":"e","csi":{"driver":"x.example.com","nodePublishSecretRef":{"name":"csi-creds"}}},
		    {"name":"f","azureFile":{"secretName":"az"}},{"name":"g","rbd":{"secretRef":{"name":"ceph"}}},
		    {"name":"h","ephemeral":{"volumeClaimTemplate":{"spec":{}}}}],
		  "initContainers":[{"name":"init","envFrom":[{"configMapRef":{"name":"cm-init"}}]}],
		  "containers":[{"name":"app","env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"cm-env","key":"a"}}},
		    {"name":"B","valueFrom":{"secretKeyRef":{"name":"secret-env","key":"b"}}},{"name":"C","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
		    "envFrom":[{"secretRef":{"name":"secret-envfrom"}}]}],
		  "ephemeralContainers":[{"name":"debug","env":[{"name":"E","valueFrom":{"secretKeyRef":{"name":"secret-debug"}}}]}]}`,
		`{"serviceAccountName":"default","containers":[{"name":"c"}]}`,
		`{"serviceAccount":"legacy","containers":[{"name":"c"}]}`,
		`{"serviceAccountName":"","serviceAccount":"default"}`,
		`{"volumes":"x","containers":[1,"a",null,{"env":{"name":"x"}}],"imagePullSecrets":[{"name":7}]}`,
		`{"volumes":[{"configMap":{"name":""}},{"secret":{"secretName":["a"]}},{"projected":{"sources":{"x":1}}}]}`,
		`[]`, `"spec"`, `null`,
	}
	for i, s := range specs {
		f.Add(uint8(i%len(fuzzKinds)), []byte(s))
	}
	f.Add(uint8(len(fuzzKinds)), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"volumes":[{"configMap":{"name":"c"}}]}}}}`))
	f.Add(uint8(len(fuzzKinds)), []byte(`{"apiVersion":"x.io/v1","kind":"Thing","spec":{"template":{"spec":{"containers":"c","volumes":[{"secret":{"secretName":"s"}}]}}}}`))
	f.Add(uint8(len(fuzzKinds)), []byte(`{"kind":"Pod","apiVersion":"v1","spec":"none"}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		v, ok := decodeJSON(data)
		if !ok {
			return
		}
		var obj *unstructured.Unstructured
		if int(kind) >= len(fuzzKinds) {
			m, isMap := v.(map[string]any)
			if !isMap {
				return
			}
			obj = &unstructured.Unstructured{Object: m}
		} else {
			probe := fuzzObject(kind, 1, nil)
			obj = fuzzObject(kind, 1, v, PodSpecPath(probe)...)
		}
		before := obj.DeepCopy()
		got := Followers(obj)
		if !reflect.DeepEqual(obj.Object, before.Object) {
			t.Fatalf("Followers changed its input")
		}
		if again := Followers(obj); !reflect.DeepEqual(got, again) {
			t.Fatalf("Followers is not deterministic: %v then %v", got, again)
		}
		strs := map[string]bool{}
		collectStrings(obj.Object, strs)
		for i, ref := range got {
			switch ref.Kind {
			case "ConfigMap", "Secret", "PersistentVolumeClaim":
			case "ServiceAccount":
				if ref.Name == "default" {
					t.Fatalf("Followers returned the default ServiceAccount: %v", got)
				}
			default:
				t.Fatalf("Followers returned a %s: %v", ref.Kind, got)
			}
			if ref.Name == "" || !strs[ref.Name] {
				t.Fatalf("Followers returned %s %q, which is not a string of the input", ref.Kind, ref.Name)
			}
			if i > 0 && compareRefs(got[i-1], ref) >= 0 {
				t.Fatalf("Followers are not sorted without duplicates: %v", got)
			}
		}
		if PodSpecPath(obj) == nil && got != nil {
			t.Fatalf("Followers of an object without a pod spec = %v", got)
		}
	})
}

// compareRefs orders references by kind then name.
func compareRefs(a, b v1alpha1.ObjectReference) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
}

// collectStrings records every string value (not key) in v.
func collectStrings(v any, out map[string]bool) {
	switch x := v.(type) {
	case string:
		out[x] = true
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}

// FuzzShape reads the replica and pod fields of arbitrary objects: no
// panic, no change to the input, replicas that SetReplicas wrote read
// back, and a pod selector only for a Migratable kind and never empty.
func FuzzShape(f *testing.F) {
	f.Add(uint8(0), []byte(`{"replicas":3,"selector":{"matchLabels":{"app":"web"}}}`), []byte(`{"observedGeneration":2,"readyReplicas":2,"replicas":3}`), int32(5))
	f.Add(uint8(1), []byte(`{"selector":{"matchExpressions":[{"key":"app","operator":"In","values":["a"]}]}}`), []byte(`{"observedGeneration":1}`), int32(0))
	f.Add(uint8(3), []byte(`{"replicas":"3","selector":{}}`), []byte(`{"observedGeneration":5,"readyReplicas":-1}`), int32(-1))
	f.Add(uint8(9), []byte(`{"selector":{"matchExpressions":[{"key":"app","operator":"Bogus"}]}}`), []byte(`{"observedGeneration":1,"replicas":1.5}`), int32(2))
	f.Add(uint8(10), []byte(`{"replicas":4}`), []byte(`[]`), int32(7))
	f.Add(uint8(11), []byte(`{"replicas":4}`), []byte(`null`), int32(7))
	f.Add(uint8(4), []byte(`"spec"`), []byte(`{}`), int32(1))
	f.Fuzz(func(t *testing.T, kind uint8, specData, statusData []byte, n int32) {
		spec, ok1 := decodeJSON(specData)
		status, ok2 := decodeJSON(statusData)
		if !ok1 || !ok2 {
			return
		}
		obj := fuzzObject(kind, 1, spec, "spec")
		if status != nil {
			obj.Object["status"] = status
		}
		before := obj.DeepCopy()
		PodSpecPath(obj)
		Replicas(obj)
		Aggregated(obj)
		ready, readyOK := ReadyReplicas(obj)
		pods, podsOK := PodCount(obj)
		sel, selOK := PodSelector(obj)
		if !reflect.DeepEqual(obj.Object, before.Object) {
			t.Fatalf("reading the object changed it")
		}
		migratable := Migratable(obj)
		if (readyOK || podsOK || selOK) && !migratable {
			t.Fatalf("a kind that is not Migratable has ready %d (%v), pods %d (%v), selector %v (%v)", ready, readyOK, pods, podsOK, sel, selOK)
		}
		if selOK && (sel == nil || sel.Empty()) {
			t.Fatalf("PodSelector returned an empty selector as usable")
		}

		SetReplicas(obj, n)
		if got, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas"); err != nil || !found || got != int64(n) {
			return // spec is not an object: SetReplicas cannot write
		}
		gk := obj.GroupVersionKind().GroupKind()
		got, ok := Replicas(obj)
		if n < 0 && interpreterFor(gk) != nil {
			// An interpreted kind's negative count is no count (the
			// apiserver refuses one in a native workload anyway).
			return
		}
		switch {
		case hasReplicas(gk) || (gk.Group != "" && !isNativeGroup(gk.Group) && interpreterFor(gk) == nil):
			if !ok || got != n {
				t.Fatalf("Replicas after SetReplicas(%d) = %d, %v", n, got, ok)
			}
		case ok:
			t.Fatalf("Replicas of a native %s without replicas = %d, true", gk, got)
		}
	})
}

// FuzzAggregateStatus aggregates arbitrary member statuses into the host
// status: no panic, inputs unchanged, the same result whatever the
// members' order, and no write churn: once the aggregate is written, the
// same members give changed=false.
func FuzzAggregateStatus(f *testing.F) {
	deployment := `{"observedGeneration":7,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,
	  "conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}`
	f.Add(uint8(0), []byte(`{}`), []byte(`{}`), []byte(deployment), []byte(deployment), []byte(``), uint8(0xff), int64(3))
	f.Add(uint8(0), []byte(`{}`), []byte(`{"observedGeneration":3,"collisionCount":2,"conditions":[{"type":"Available","status":"False","lastTransitionTime":"2026-03-01T10:00:00Z"}]}`),
		[]byte(`{"observedGeneration":7,"replicas":3,"readyReplicas":1,"unavailableReplicas":2,"terminatingReplicas":1,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}`),
		[]byte(`{"replicas":"x"}`), []byte(`null`), uint8(0x05), int64(4))
	f.Add(uint8(1), []byte(`{}`), []byte(`{}`), []byte(`{"observedGeneration":7,"replicas":3,"readyReplicas":3,"currentReplicas":3,"updatedReplicas":3,"availableReplicas":3}`),
		[]byte(`{"observedGeneration":6}`), []byte(`{}`), uint8(0x03), int64(1))
	f.Add(uint8(2), []byte(`{}`), []byte(`{}`), []byte(`{"observedGeneration":7,"desiredNumberScheduled":2,"currentNumberScheduled":2,"numberReady":1,"numberMisscheduled":0}`),
		[]byte(``), []byte(``), uint8(0x01), int64(1))
	f.Add(uint8(3), []byte(`{}`), []byte(`"status"`), []byte(`{"observedGeneration":7,"replicas":1,"fullyLabeledReplicas":1}`), []byte(`[]`), []byte(``), uint8(0x07), int64(2))
	f.Add(uint8(4), []byte(`{"suspend":true}`), []byte(`{}`),
		[]byte(`{"active":1,"ready":1,"succeeded":2,"startTime":"2026-03-01T09:01:00Z"}`),
		[]byte(`{"succeeded":3,"startTime":"2026-03-01T09:00:00Z","completionTime":"2026-03-01T09:05:00Z","conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`),
		[]byte(`{"failed":2,"conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},{"type":"Failed","status":"True"}]}`), uint8(0x07), int64(1))
	f.Add(uint8(4), []byte(`{}`), []byte(`{"conditions":[{"type":"Complete","status":"True","lastProbeTime":"2026-03-01T09:00:00Z"}],"succeeded":9}`),
		[]byte(`{"succeeded":1}`), []byte(`{"startTime":"bad"}`), []byte(``), uint8(0x02), int64(1))
	f.Add(uint8(8), []byte(`{}`), []byte(`{}`), []byte(`{"loadBalancer":{"ingress":[{"ip":"10.0.0.2"},{"hostname":"a.example.com","ports":[{"port":80,"protocol":"TCP"}]}]}}`),
		[]byte(`{"loadBalancer":{"ingress":[{"ip":"10.0.0.2"},{"ip":"10.0.0.1","ipMode":"VIP"}]}}`), []byte(`{"loadBalancer":{}}`), uint8(0), int64(1))
	f.Add(uint8(11), []byte(`{}`), []byte(`{}`), []byte(`{}`), []byte(``), []byte(``), uint8(0), int64(1))
	f.Fuzz(func(t *testing.T, kind uint8, specData, templateStatus, m0, m1, m2 []byte, flags uint8, generation int64) {
		spec, ok := decodeJSON(specData)
		if !ok {
			return
		}
		template := fuzzObject(kind, generation, spec, "spec")
		if len(templateStatus) > 0 {
			s, ok := decodeJSON(templateStatus)
			if !ok {
				return
			}
			template.Object["status"] = s
		}
		var members []Member
		for i, data := range [][]byte{m0, m1, m2} {
			m := Member{Cluster: string(rune('a' + i)), Current: flags&(1<<i) != 0}
			if flags&(1<<(i+3)) == 0 { // a copy (else none)
				m.Object = fuzzObject(kind, memberGeneration, nil)
				if len(data) > 0 {
					s, ok := decodeJSON(data)
					if !ok {
						return
					}
					m.Object.Object["status"] = s
				}
			}
			members = append(members, m)
		}
		now := metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))

		templateBefore := template.DeepCopy()
		membersBefore := deepCopyMembers(members)
		status, changed := AggregateStatus(template, members, now)
		if !reflect.DeepEqual(template.Object, templateBefore.Object) || !reflect.DeepEqual(members, membersBefore) {
			t.Fatalf("AggregateStatus changed its input")
		}
		if !Aggregated(template) {
			if status != nil || changed {
				t.Fatalf("AggregateStatus of a kind without aggregation = %v, %v", status, changed)
			}
			return
		}
		reversed := slices.Clone(members)
		slices.Reverse(reversed)
		if again, againChanged := AggregateStatus(template, reversed, now); !reflect.DeepEqual(status, again) || changed != againChanged {
			t.Fatalf("AggregateStatus depends on the members' order:\n%v, %v\n%v, %v", status, changed, again, againChanged)
		}
		if status == nil {
			return
		}

		// Write the status as the apiserver would store it, read it back
		// and aggregate again a minute later: nothing changed.
		written := template.DeepCopy()
		written.Object["status"] = status
		data, err := written.MarshalJSON()
		if err != nil {
			t.Fatalf("the aggregated status does not encode: %v", err)
		}
		back := &unstructured.Unstructured{}
		if err := back.UnmarshalJSON(data); err != nil {
			t.Fatalf("the aggregated status does not decode: %v", err)
		}
		later := metav1.NewTime(now.Add(time.Minute))
		next, nextChanged := AggregateStatus(back, members, later)
		if nextChanged {
			t.Fatalf("AggregateStatus wants another write after its own status was written:\nwritten: %v\nnext:    %v", status, next)
		}
	})
}

// deepCopyMembers copies members and their objects.
func deepCopyMembers(members []Member) []Member {
	out := slices.Clone(members)
	for i := range out {
		if out[i].Object != nil {
			out[i].Object = out[i].Object.DeepCopy()
		}
	}
	return out
}

// hasReplicas reports whether a kind's interpreter knows its replicas.
func hasReplicas(gk schema.GroupKind) bool {
	in := interpreterFor(gk)
	return in != nil && in.HasReplicas()
}
