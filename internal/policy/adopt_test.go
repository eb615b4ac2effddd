package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestAdopt(t *testing.T) {
	annotated := func(namespace, value string) *unstructured.Unstructured {
		u := deployment(namespace, "web", nil)
		if value != "" {
			u.SetAnnotations(map[string]string{v1alpha1.AnnotationConflictResolution: value})
		}
		return u
	}
	chosen := func(kind, namespace, name string, cr v1alpha1.ConflictResolution) *Chosen {
		return &Chosen{Ref: v1alpha1.PolicyReference{Kind: kind, Namespace: namespace, Name: name}, Spec: &v1alpha1.PropagationSpec{ConflictResolution: cr}}
	}
	ppOf := func(namespace string, cr v1alpha1.ConflictResolution) *Chosen {
		return chosen(KindPropagationPolicy, namespace, "p", cr)
	}
	cppOf := func(cr v1alpha1.ConflictResolution) *Chosen {
		return chosen(KindClusterPropagationPolicy, "", "global", cr)
	}
	gone := func(c *Chosen) *Chosen { c.Spec = nil; return c }
	leaders := func(cs ...*Chosen) []Chosen {
		out := make([]Chosen, len(cs))
		for i, c := range cs {
			out[i] = *c
		}
		return out
	}
	const (
		abort = v1alpha1.ConflictAbort
		adopt = v1alpha1.ConflictAdopt
		unset = v1alpha1.ConflictResolution("")
	)
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		own     *Chosen
		leaders []Chosen
		want    bool
		// hint: substrings of the hint (only checked when not adopting).
		hint []string
	}{
		// An object with a policy.
		{name: "namespace policy Abort, no annotation", obj: annotated("shop", ""), own: ppOf("shop", abort),
			hint: []string{"set the annotation " + v1alpha1.AnnotationConflictResolution + ": adopt (or conflictResolution: Adopt in the policy)"}},
		{name: "namespace policy Abort, annotation adopt", obj: annotated("shop", "adopt"), own: ppOf("shop", abort), want: true},
		{name: "namespace policy, annotation Adopt in another case", obj: annotated("shop", " Adopt "), own: ppOf("shop", unset), want: true},
		{name: "namespace policy Adopt, no annotation", obj: annotated("shop", ""), own: ppOf("shop", adopt), want: true},
		{name: "namespace policy Adopt, annotation abort narrows", obj: annotated("shop", "abort"), own: ppOf("shop", adopt),
			hint: []string{"annotation " + v1alpha1.AnnotationConflictResolution + ": abort", "turns adoption off"}},
		{name: "namespace policy gone, annotation adopt", obj: annotated("shop", "adopt"), own: gone(ppOf("shop", abort)), want: true},
		{name: "policy of another namespace, annotation adopt", obj: annotated("shop", "adopt"), own: ppOf("other", abort),
			hint: []string{"is ignored", "PropagationPolicy other/p"}},
		{name: "cluster policy Abort, annotation adopt is ignored", obj: annotated("shop", "adopt"), own: cppOf(abort),
			hint: []string{"annotation " + v1alpha1.AnnotationConflictResolution + ": adopt on the object is ignored", "ClusterPropagationPolicy global does not set conflictResolution: Adopt"}},
		{name: "cluster policy default, annotation adopt is ignored", obj: annotated("shop", "adopt"), own: cppOf(unset),
			hint: []string{"is ignored", "ClusterPropagationPolicy global"}},
		{name: "cluster policy gone, annotation adopt is ignored", obj: annotated("shop", "adopt"), own: gone(cppOf(adopt)),
			hint: []string{"is ignored"}},
		{name: "cluster policy Abort, no annotation", obj: annotated("shop", ""), own: cppOf(abort),
			hint: []string{"set conflictResolution: Adopt in ClusterPropagationPolicy global"}},
		{name: "cluster policy Adopt, no annotation", obj: annotated("shop", ""), own: cppOf(adopt), want: true},
		{name: "cluster policy Adopt, annotation adopt", obj: annotated("shop", "adopt"), own: cppOf(adopt), want: true},
		{name: "cluster policy Adopt, annotation abort narrows", obj: annotated("shop", "ABORT"), own: cppOf(adopt),
			hint: []string{"turns adoption off"}},
		{name: "cluster-scoped object, cluster policy Abort, annotation adopt is ignored",
			obj: func() *unstructured.Unstructured { u := annotated("", "adopt"); u.SetKind("ClusterRole"); return u }(), own: cppOf(abort),
			hint: []string{"is ignored"}},
		{name: "unknown annotation value counts as none", obj: annotated("shop", "yes"), own: cppOf(abort),
			hint: []string{"set conflictResolution: Adopt"}},
		{name: "leaders are ignored when the object has a policy", obj: annotated("shop", "adopt"), own: cppOf(abort),
			leaders: leaders(ppOf("shop", adopt)), hint: []string{"is ignored"}},
		// A follower (no policy of its own).
		{name: "follower, no annotation", obj: annotated("shop", ""), leaders: leaders(ppOf("shop", adopt)),
			hint: []string{"set the annotation " + v1alpha1.AnnotationConflictResolution + ": adopt on the object"}},
		{name: "follower adopt, workloads under the namespace's policies", obj: annotated("shop", "adopt"),
			leaders: leaders(ppOf("shop", abort), ppOf("shop", unset)), want: true},
		{name: "follower adopt, workload under a cluster policy with Adopt", obj: annotated("shop", "adopt"),
			leaders: leaders(cppOf(adopt)), want: true},
		{name: "follower adopt, one workload under a cluster policy without Adopt", obj: annotated("shop", "adopt"),
			leaders: leaders(ppOf("shop", abort), cppOf(abort)),
			hint:    []string{"is ignored", "a workload that references it is propagated by ClusterPropagationPolicy global"}},
		{name: "follower adopt, workload's cluster policy gone", obj: annotated("shop", "adopt"),
			leaders: leaders(gone(cppOf(adopt))), hint: []string{"is ignored"}},
		{name: "follower adopt, no workload references it any more", obj: annotated("shop", "adopt"),
			hint: []string{"is ignored", "no propagated workload references it"}},
		{name: "follower abort", obj: annotated("shop", "abort"), leaders: leaders(cppOf(adopt)),
			hint: []string{"turns adoption off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Adopt(tt.obj, tt.own, tt.leaders)
			if got.Adopt != tt.want {
				t.Fatalf("Adopt = %v (hint %q), want %v", got.Adopt, got.Hint, tt.want)
			}
			if got.Adopt {
				if got.Hint != "" {
					t.Errorf("hint %q when adopting", got.Hint)
				}
				return
			}
			for _, sub := range tt.hint {
				if !strings.Contains(got.Hint, sub) {
					t.Errorf("hint %q, want it to mention %q", got.Hint, sub)
				}
			}
		})
	}
}

func TestWantsAdopt(t *testing.T) {
	for value, want := range map[string]bool{"": false, "adopt": true, "Adopt": true, " adopt": true, "abort": false, "adopted": false} {
		u := deployment("shop", "web", nil)
		u.SetAnnotations(map[string]string{v1alpha1.AnnotationConflictResolution: value})
		if got := WantsAdopt(u); got != want {
			t.Errorf("WantsAdopt(%q) = %v, want %v", value, got, want)
		}
	}
}
