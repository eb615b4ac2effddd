package workload

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestJobReplicas(t *testing.T) {
	job := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": spec}}
	}
	cases := []struct {
		name            string
		spec            map[string]any
		share           int32
		wantOK          bool
		wantCompletions int64
		wantParallelism int64
	}{
		{"completions are the work to divide", map[string]any{"completions": int64(6), "parallelism": int64(3)}, 2, true, 2, 1},
		{"parallelism rounds up", map[string]any{"completions": int64(6), "parallelism": int64(4)}, 2, true, 2, 2},
		{"parallelism never above the share", map[string]any{"completions": int64(6), "parallelism": int64(6)}, 1, true, 1, 1},
		{"at least one pod at a time", map[string]any{"completions": int64(100), "parallelism": int64(1)}, 10, true, 10, 1},
		{"parallelism defaults to 1", map[string]any{"completions": int64(4)}, 2, true, 2, 1},
		{"a paused Job stays paused", map[string]any{"completions": int64(6), "parallelism": int64(0)}, 2, true, 2, 0},
		{"a work queue (no completions) is not divided", map[string]any{"parallelism": int64(3)}, 0, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := job(c.spec)
			if _, ok := Replicas(obj); ok != c.wantOK {
				t.Fatalf("Replicas ok = %v, want %v", ok, c.wantOK)
			}
			if !c.wantOK {
				return
			}
			if err := SetReplicas(obj, c.share); err != nil {
				t.Fatal(err)
			}
			comp, _, _ := unstructured.NestedInt64(obj.Object, "spec", "completions")
			par, _, _ := unstructured.NestedInt64(obj.Object, "spec", "parallelism")
			if comp != c.wantCompletions || par != c.wantParallelism {
				t.Errorf("completions/parallelism = %d/%d, want %d/%d", comp, par, c.wantCompletions, c.wantParallelism)
			}
		})
	}
	if p := ReplicasPath(job(nil)); len(p) != 2 || p[1] != "completions" {
		t.Errorf("ReplicasPath = %v", p)
	}
}
