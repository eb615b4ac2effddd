package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// object is an unstructured object of apiVersion and kind with the given
// generation and extra top-level fields.
func object(apiVersion, kind string, generation int64, fields map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
	}}
	if generation != 0 {
		obj.SetGeneration(generation)
	}
	for k, v := range fields {
		obj.Object[k] = v
	}
	return obj
}

// withSelector is a spec with the given selector.
func withSelector(selector any) map[string]any {
	return map[string]any{"spec": map[string]any{"replicas": int64(3), "selector": selector}}
}

func TestMigratable(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             bool
	}{
		{"apps/v1", "Deployment", true},
		{"apps/v1", "StatefulSet", true},
		{"apps/v1", "ReplicaSet", true},
		{"apps/v1beta2", "Deployment", true},
		{"extensions/v1beta1", "Deployment", true},
		{"extensions/v1beta1", "ReplicaSet", true},
		{"apps/v1", "DaemonSet", false},
		{"batch/v1", "Job", false},
		{"v1", "ReplicationController", false},
		{"v1", "Pod", false},
		{"example.com/v1", "Deployment", false},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+"/"+tt.kind, func(t *testing.T) {
			if got := Migratable(object(tt.apiVersion, tt.kind, 1, nil)); got != tt.want {
				t.Errorf("Migratable = %v, want %v", got, tt.want)
			}
		})
	}
	if Migratable(nil) {
		t.Errorf("Migratable(nil) = true, want false")
	}
}

func TestPodSelector(t *testing.T) {
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		want   string // the selector's String, when ok
		wantOK bool
	}{
		{
			name:   "matchLabels",
			obj:    object("apps/v1", "Deployment", 1, withSelector(map[string]any{"matchLabels": map[string]any{"app": "web"}})),
			want:   "app=web",
			wantOK: true,
		},
		{
			name: "matchExpressions",
			obj: object("apps/v1", "StatefulSet", 1, withSelector(map[string]any{
				"matchLabels": map[string]any{"app": "db"},
				"matchExpressions": []any{
					map[string]any{"key": "tier", "operator": "In", "values": []any{"primary", "replica"}},
				},
			})),
			want:   "app=db,tier in (primary,replica)",
			wantOK: true,
		},
		{
			name:   "ReplicaSet",
			obj:    object("apps/v1", "ReplicaSet", 1, withSelector(map[string]any{"matchLabels": map[string]any{"app": "web"}})),
			want:   "app=web",
			wantOK: true,
		},
		{
			name: "empty selector would match everything",
			obj:  object("apps/v1", "Deployment", 1, withSelector(map[string]any{})),
		},
		{
			name: "missing selector",
			obj:  object("apps/v1", "Deployment", 1, map[string]any{"spec": map[string]any{"replicas": int64(1)}}),
		},
		{
			name: "selector of the wrong type",
			obj:  object("apps/v1", "Deployment", 1, withSelector("app=web")),
		},
		{
			name: "invalid operator",
			obj: object("apps/v1", "Deployment", 1, withSelector(map[string]any{
				"matchExpressions": []any{map[string]any{"key": "app", "operator": "Near", "values": []any{"web"}}},
			})),
		},
		{
			name: "invalid label value",
			obj:  object("apps/v1", "Deployment", 1, withSelector(map[string]any{"matchLabels": map[string]any{"app": "not a value"}})),
		},
		{
			name: "kind failover does not support",
			obj:  object("apps/v1", "DaemonSet", 1, withSelector(map[string]any{"matchLabels": map[string]any{"app": "web"}})),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, ok := PodSelector(tt.obj)
			if ok != tt.wantOK {
				t.Fatalf("PodSelector ok = %v, want %v (selector %v)", ok, tt.wantOK, sel)
			}
			if !ok {
				if sel != nil {
					t.Errorf("PodSelector = %v with ok false, want nil", sel)
				}
				return
			}
			if got := sel.String(); got != tt.want {
				t.Errorf("PodSelector = %q, want %q", got, tt.want)
			}
		})
	}
}

// withStatusFields is a status with the given fields.
func withStatusFields(fields map[string]any) map[string]any {
	return map[string]any{"status": fields}
}

func TestReadyReplicasAndPodCount(t *testing.T) {
	tests := []struct {
		name        string
		obj         *unstructured.Unstructured
		ready, pods int32
		wantOK      bool
	}{
		{
			name:   "current status",
			obj:    object("apps/v1", "Deployment", 4, withStatusFields(map[string]any{"observedGeneration": int64(4), "replicas": int64(5), "readyReplicas": int64(3)})),
			ready:  3,
			pods:   5,
			wantOK: true,
		},
		{
			name:   "observed a later generation than the cached copy",
			obj:    object("apps/v1", "StatefulSet", 4, withStatusFields(map[string]any{"observedGeneration": int64(5), "replicas": int64(2), "readyReplicas": int64(2)})),
			ready:  2,
			pods:   2,
			wantOK: true,
		},
		{
			name:   "counts left out when zero",
			obj:    object("apps/v1", "ReplicaSet", 2, withStatusFields(map[string]any{"observedGeneration": int64(2)})),
			wantOK: true,
		},
		{
			name: "status of an older spec",
			obj:  object("apps/v1", "Deployment", 4, withStatusFields(map[string]any{"observedGeneration": int64(3), "replicas": int64(5), "readyReplicas": int64(5)})),
		},
		{
			name: "no status yet",
			obj:  object("apps/v1", "Deployment", 1, nil),
		},
		{
			name: "count of the wrong type",
			obj:  object("apps/v1", "Deployment", 1, withStatusFields(map[string]any{"observedGeneration": int64(1), "replicas": "5", "readyReplicas": "3"})),
		},
		{
			name: "negative count",
			obj:  object("apps/v1", "Deployment", 1, withStatusFields(map[string]any{"observedGeneration": int64(1), "replicas": int64(-1), "readyReplicas": int64(-1)})),
		},
		{
			name: "kind failover does not support",
			obj:  object("apps/v1", "DaemonSet", 1, withStatusFields(map[string]any{"observedGeneration": int64(1), "numberReady": int64(3)})),
		},
		{
			name: "nil object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, ok := ReadyReplicas(tt.obj)
			if ok != tt.wantOK || ready != tt.ready {
				t.Errorf("ReadyReplicas = %d, %v; want %d, %v", ready, ok, tt.ready, tt.wantOK)
			}
			pods, ok := PodCount(tt.obj)
			if ok != tt.wantOK || pods != tt.pods {
				t.Errorf("PodCount = %d, %v; want %d, %v", pods, ok, tt.pods, tt.wantOK)
			}
		})
	}
}

func TestPodOwners(t *testing.T) {
	rs := schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	hashed := map[string]string{"app": "web", "pod-template-hash": "5d8f9c"}
	tests := []struct {
		name   string
		kind   schema.GroupKind
		owner  string
		labels map[string]string
		want   []PodOwner
	}{
		{name: "Deployment's ReplicaSet", kind: rs, owner: "web-5d8f9c", labels: hashed,
			want: []PodOwner{{GroupKind: rs, Name: "web-5d8f9c"}, {GroupKind: deploy, Name: "web"}}},
		{name: "ReplicaSet of its own (no hash label)", kind: rs, owner: "web", labels: map[string]string{"app": "web"},
			want: []PodOwner{{GroupKind: rs, Name: "web"}}},
		{name: "hash label that is not the name's suffix", kind: rs, owner: "web", labels: hashed,
			want: []PodOwner{{GroupKind: rs, Name: "web"}}},
		{name: "name that is only the hash", kind: rs, owner: "-5d8f9c", labels: hashed,
			want: []PodOwner{{GroupKind: rs, Name: "-5d8f9c"}}},
		{name: "StatefulSet", kind: sts, owner: "db", labels: map[string]string{"app": "db"},
			want: []PodOwner{{GroupKind: sts, Name: "db"}}},
		{name: "Job is not migratable", kind: schema.GroupKind{Group: "batch", Kind: "Job"}, owner: "import", labels: nil},
		{name: "ReplicaSet of another group", kind: schema.GroupKind{Group: "example.com", Kind: "ReplicaSet"}, owner: "web-5d8f9c", labels: hashed},
		{name: "no controller", labels: hashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, PodOwners(tt.kind, tt.owner, tt.labels)); diff != "" {
				t.Errorf("PodOwners mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
