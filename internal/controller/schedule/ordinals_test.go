package schedule

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestWithOrdinals(t *testing.T) {
	sts := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	divide := &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}
	duplicate := &v1alpha1.Placement{}
	tmpl := func(annotations map[string]string, start *int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(4)}}}
		u.SetAnnotations(annotations)
		if start != nil {
			_ = unstructured.SetNestedField(u.Object, *start, "spec", "ordinals", "start")
		}
		return u
	}
	at := func(c string, n, start int32) v1alpha1.ClusterPlacement {
		return v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To(n), OrdinalStart: ptr.To(start)}
	}
	plain := func(c string, n int32) v1alpha1.ClusterPlacement {
		return v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To(n)}
	}
	cases := []struct {
		name      string
		gvk       schema.GroupVersionKind
		placement *v1alpha1.Placement
		tmpl      *unstructured.Unstructured
		current   []v1alpha1.ClusterPlacement
		next      []v1alpha1.ClusterPlacement
		want      []v1alpha1.ClusterPlacement
		inForce   bool // ordinalsInForce(current)
	}{
		{"a divided StatefulSet gets ranges", sts, divide, tmpl(nil, nil), nil,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2)}, []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)}, true},
		{"from the template's start", sts, divide, tmpl(nil, ptr.To[int64](7)), []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)},
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2)}, []v1alpha1.ClusterPlacement{at("a", 2, 7), at("b", 2, 9)}, false},
		{"kept where they are", sts, divide, tmpl(nil, nil), []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)},
			[]v1alpha1.ClusterPlacement{plain("a", 1), plain("b", 3)}, []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)}, true},
		{"a placement from before ordinals is decided again", sts, divide, tmpl(nil, nil), []v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2)},
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2)}, []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)}, false},
		{"per-member ordinals carry none", sts, divide, tmpl(map[string]string{v1alpha1.AnnotationOrdinals: v1alpha1.OrdinalsPerMember}, nil),
			[]v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)},
			[]v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2)}, []v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2)}, false},
		{"a duplicated StatefulSet carries none", sts, duplicate, tmpl(nil, nil), nil,
			[]v1alpha1.ClusterPlacement{{Cluster: "a"}}, []v1alpha1.ClusterPlacement{{Cluster: "a"}}, true},
		{"a Deployment carries none", deploy, divide, tmpl(nil, nil), nil,
			[]v1alpha1.ClusterPlacement{plain("a", 2)}, []v1alpha1.ClusterPlacement{plain("a", 2)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &framework.Unit{GVK: c.gvk, Placement: c.placement, Replicas: ptr.To[int32](4)}
			all := func(string) bool { return true }
			got := withOrdinals(u, c.tmpl, c.current, c.next, all, all)
			if format(got) != format(c.want) {
				t.Errorf("withOrdinals = %s, want %s", format(got), format(c.want))
			}
			if in := ordinalsInForce(u, c.tmpl, c.current, all); in != c.inForce {
				t.Errorf("ordinalsInForce = %v, want %v", in, c.inForce)
			}
		})
	}
}

func format(ps []v1alpha1.ClusterPlacement) string {
	s := ""
	for _, p := range ps {
		s += p.Cluster
		if p.Replicas != nil {
			s += "=" + string(rune('0'+*p.Replicas))
		}
		if p.OrdinalStart != nil {
			s += "@" + string(rune('0'+*p.OrdinalStart))
		}
		s += " "
	}
	return s
}

func TestWithOrdinalsJobs(t *testing.T) {
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	divide := &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}
	tmpl := func(indexed bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{"completions": int64(6)}}}
		if indexed {
			_ = unstructured.SetNestedField(u.Object, "Indexed", "spec", "completionMode")
		}
		return u
	}
	at := func(c string, n, start int32) v1alpha1.ClusterPlacement {
		return v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To(n), OrdinalStart: ptr.To(start)}
	}
	plain := func(c string, n int32) v1alpha1.ClusterPlacement {
		return v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To(n)}
	}
	all := func(string) bool { return true }
	notB := func(c string) bool { return c != "b" }
	cases := []struct {
		name          string
		indexed       bool
		current, next []v1alpha1.ClusterPlacement
		exists        func(string) bool
		want          []v1alpha1.ClusterPlacement
	}{
		{"the first placement is the scheduler's", false, nil,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2), plain("c", 2)}, all,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2), plain("c", 2)}},
		{"an Indexed Job's first placement is numbered", true, nil,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2), plain("c", 2)}, all,
			[]v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2), at("c", 2, 4)}},
		{"once made it is kept", false, []v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2), plain("c", 2)},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}, all,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("b", 2), plain("c", 2)}},
		{"with its ranges", true, []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2), at("c", 2, 4)},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}, all,
			[]v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2), at("c", 2, 4)}},
		{"a cluster that is gone leaves, its share with it", true, []v1alpha1.ClusterPlacement{at("a", 2, 0), at("b", 2, 2), at("c", 2, 4)},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}, notB,
			[]v1alpha1.ClusterPlacement{at("a", 2, 0), at("c", 2, 4)}},
		{"a placement that lost a cluster stays as it is", false, []v1alpha1.ClusterPlacement{plain("a", 2), plain("c", 2)},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}, all,
			[]v1alpha1.ClusterPlacement{plain("a", 2), plain("c", 2)}},
		{"a Job placed whole before it was divided stays whole", true, []v1alpha1.ClusterPlacement{{Cluster: "a"}, {Cluster: "b"}},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("b", 3)}, all,
			[]v1alpha1.ClusterPlacement{{Cluster: "a"}, {Cluster: "b"}}},
		{"every cluster gone: placed afresh", false, []v1alpha1.ClusterPlacement{plain("b", 6)},
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}, notB,
			[]v1alpha1.ClusterPlacement{plain("a", 3), plain("c", 3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &framework.Unit{GVK: job, Placement: divide, Replicas: ptr.To[int32](6)}
			if got := withOrdinals(u, tmpl(c.indexed), c.current, c.next, c.exists, c.exists); format(got) != format(c.want) {
				t.Errorf("withOrdinals = %s, want %s", format(got), format(c.want))
			}
		})
	}
}

func TestSummaryShowsRanges(t *testing.T) {
	got := summary([]v1alpha1.ClusterPlacement{
		{Cluster: "a", Replicas: ptr.To[int32](2), OrdinalStart: ptr.To[int32](0)},
		{Cluster: "b", Replicas: ptr.To[int32](0), OrdinalStart: ptr.To[int32](2)},
		{Cluster: "c", Replicas: ptr.To[int32](3)},
		{Cluster: "d"},
	})
	if want := "a=2[0..1],b=0,c=3,d"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

func TestWithOrdinalsZeroShareStays(t *testing.T) {
	u := &framework.Unit{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, Replicas: ptr.To[int32](2),
		Placement: &v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}
	tmpl := &unstructured.Unstructured{Object: map[string]any{}}
	at := func(c string, n, start int32) v1alpha1.ClusterPlacement {
		return v1alpha1.ClusterPlacement{Cluster: c, Replicas: ptr.To(n), OrdinalStart: ptr.To(start)}
	}
	prev := []v1alpha1.ClusterPlacement{at("a", 1, 0), at("b", 1, 1), at("c", 1, 2)}
	// Scaled to 2, the scheduler gave b nothing and left it out.
	next := []v1alpha1.ClusterPlacement{{Cluster: "a", Replicas: ptr.To[int32](1)}, {Cluster: "c", Replicas: ptr.To[int32](1)}}
	all := func(string) bool { return true }
	if got, want := format(withOrdinals(u, tmpl, prev, next, all, all)), format([]v1alpha1.ClusterPlacement{at("a", 1, 0), at("b", 1, 1), at("c", 0, 2)}); got != want {
		t.Errorf("b still eligible: %s, want %s (the top ordinal goes)", got, want)
	}
	notB := func(c string) bool { return c != "b" }
	// b filtered out at the same time: its db-1 goes to a, and db-2, the
	// highest, is the one removed.
	if got, want := format(withOrdinals(u, tmpl, prev, next, all, notB)), format([]v1alpha1.ClusterPlacement{at("a", 2, 0), at("c", 0, 2)}); got != want {
		t.Errorf("b filtered out: %s, want %s (its range handed over)", got, want)
	}
}
