package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jobKind is batch/v1 Job: divided, its work (completions) is split, not
// its pods.
var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// EnvCompletionIndexOffset is the environment variable Flotilla gives the
// containers of a divided Indexed Job's copy: the first of the
// federation's completion indexes that copy runs. A pod's index in the
// federation is JOB_COMPLETION_INDEX (its index in its member's Job)
// plus this offset.
const EnvCompletionIndexOffset = "FLOTILLA_COMPLETION_INDEX_OFFSET"

// IsJob reports whether gk is batch Job.
func IsJob(gk schema.GroupKind) bool { return gk == jobKind }

// IndexedJob reports whether obj is a Job with completionMode Indexed.
func IndexedJob(obj *unstructured.Unstructured) bool {
	mode, _, _ := unstructured.NestedString(obj.Object, "spec", "completionMode")
	return obj.GroupVersionKind().GroupKind() == jobKind && mode == "Indexed"
}

// jobCompletions is a Job's replica count for division: its completions.
// A Job without completions (a work queue: any pod's success ends it) has
// none, and goes whole.
func jobCompletions(obj *unstructured.Unstructured) (int32, bool) {
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "completions")
	if !found || err != nil || n < 0 || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// setJobCompletions gives a copy of the host Job (obj) n of its
// completions and the same share of its parallelism, rounded up (at
// least 1, at most n), so that the members together run about the
// host's parallelism.
func setJobCompletions(obj *unstructured.Unstructured, n int32) error {
	total, _ := jobCompletions(obj)
	parallelism := int64(1)
	if p, found, _ := unstructured.NestedInt64(obj.Object, "spec", "parallelism"); found {
		parallelism = p
	}
	share := parallelism
	if total > 0 {
		share = (parallelism*int64(n) + int64(total) - 1) / int64(total)
	}
	share = min(share, int64(n))
	if n > 0 && parallelism > 0 {
		share = max(share, 1) // a paused Job (parallelism 0) stays paused
	}
	if err := unstructured.SetNestedField(obj.Object, int64(n), "spec", "completions"); err != nil {
		return fmt.Errorf("set spec.completions: %w", err)
	}
	if err := unstructured.SetNestedField(obj.Object, share, "spec", "parallelism"); err != nil {
		return fmt.Errorf("set spec.parallelism: %w", err)
	}
	return nil
}

// SetCompletionIndexOffset tells the containers of an Indexed Job's copy
// the first federation index it runs (EnvCompletionIndexOffset), in
// every container and init container of its pod template.
func SetCompletionIndexOffset(obj *unstructured.Unstructured, offset int32) error {
	for _, list := range []string{"initContainers", "containers"} {
		path := []string{"spec", "template", "spec", list}
		cs, found, err := unstructured.NestedSlice(obj.Object, path...)
		if err != nil || !found {
			continue
		}
		for i, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			env, _, _ := unstructured.NestedSlice(m, "env")
			out := make([]any, 0, len(env)+1)
			for _, e := range env {
				if em, ok := e.(map[string]any); ok && em["name"] == EnvCompletionIndexOffset {
					continue
				}
				out = append(out, e)
			}
			out = append(out, map[string]any{"name": EnvCompletionIndexOffset, "value": fmt.Sprint(offset)})
			m["env"] = out
			cs[i] = m
		}
		if err := unstructured.SetNestedSlice(obj.Object, cs, path...); err != nil {
			return fmt.Errorf("set %s env: %w", list, err)
		}
	}
	return nil
}
