package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func cluster(name string, labels map[string]string, taints ...corev1.Taint) v1alpha1.MemberCluster {
	c := v1alpha1.MemberCluster{}
	c.Name = name
	c.Labels = labels
	c.Spec.Taints = taints
	return c
}

func deleting(c v1alpha1.MemberCluster) v1alpha1.MemberCluster {
	ts := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c.DeletionTimestamp = &ts
	c.Finalizers = []string{"flotilla.io/cluster"}
	return c
}

var (
	unreachable = corev1.Taint{Key: v1alpha1.TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}
	notReady    = corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute}
	preferNot   = corev1.Taint{Key: "example.com/busy", Effect: corev1.TaintEffectPreferNoSchedule}
)

// three returns member-1 and member-2 (region eu) and member-3 (region us);
// taints go to member-3.
func three(taints ...corev1.Taint) []v1alpha1.MemberCluster {
	return []v1alpha1.MemberCluster{
		cluster("member-1", map[string]string{"region": "eu"}),
		cluster("member-2", map[string]string{"region": "eu"}),
		cluster("member-3", map[string]string{"region": "us"}, taints...),
	}
}

func duplicate() *v1alpha1.PropagationSpec { return &v1alpha1.PropagationSpec{} }

func divide(weights ...v1alpha1.ClusterWeight) *v1alpha1.PropagationSpec {
	return &v1alpha1.PropagationSpec{Placement: v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{
		Type: v1alpha1.ReplicaSchedulingDivide, Weights: weights}}}
}

func weight(c string, w int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: c, Weight: w}
}

func weightMax(c string, w, max int32) v1alpha1.ClusterWeight {
	return v1alpha1.ClusterWeight{Cluster: c, Weight: w, MaxReplicas: ptr.To(max)}
}

func placed(kv ...any) []v1alpha1.ClusterPlacement {
	var out []v1alpha1.ClusterPlacement
	for i := 0; i < len(kv); i += 2 {
		p := v1alpha1.ClusterPlacement{Cluster: kv[i].(string)}
		if n, ok := kv[i+1].(int); ok {
			p.Replicas = ptr.To(int32(n))
		}
		out = append(out, p)
	}
	return out
}

// format writes a placement as "member-1=2 member-2" (no "=" without
// replicas).
func format(ps []v1alpha1.ClusterPlacement) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Replicas == nil {
			parts = append(parts, p.Cluster)
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d", p.Cluster, *p.Replicas))
		}
	}
	return strings.Join(parts, " ")
}

func TestSchedule(t *testing.T) {
	eu := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	withPlacement := func(s *v1alpha1.PropagationSpec, names []string, sel *metav1.LabelSelector) *v1alpha1.PropagationSpec {
		s.Placement.ClusterNames = names
		s.Placement.ClusterSelector = sel
		return s
	}
	bounded := func(c string, w int32, lo, hi *int32) v1alpha1.ClusterWeight {
		return v1alpha1.ClusterWeight{Cluster: c, Weight: w, MinReplicas: lo, MaxReplicas: hi}
	}
	tests := []struct {
		name     string
		in       Input
		want     string
		wantMsg  string
		nilPlace bool
	}{
		{name: "duplicate over all clusters",
			in:   Input{Policy: duplicate(), Clusters: three()},
			want: "member-1 member-2 member-3", wantMsg: "3/3 clusters"},
		{name: "duplicate ignores the object's replicas",
			in:   Input{Policy: duplicate(), Replicas: ptr.To[int32](5), Clusters: three()},
			want: "member-1 member-2 member-3", wantMsg: "3/3 clusters"},
		{name: "cluster names",
			in:   Input{Policy: withPlacement(duplicate(), []string{"member-3", "member-1"}, nil), Clusters: three()},
			want: "member-1 member-3", wantMsg: "2/2 clusters"},
		{name: "cluster selector",
			in:   Input{Policy: withPlacement(duplicate(), nil, eu), Clusters: three()},
			want: "member-1 member-2", wantMsg: "2/2 clusters"},
		{name: "names and selector intersect",
			in:   Input{Policy: withPlacement(duplicate(), []string{"member-1", "member-3"}, eu), Clusters: three()},
			want: "member-1", wantMsg: "1/1 clusters"},
		{name: "invalid selector matches nothing",
			in: Input{Policy: withPlacement(duplicate(), nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}),
				Clusters: three()},
			want: "", wantMsg: "no MemberCluster matches the policy's placement", nilPlace: true},
		{name: "no cluster matches",
			in:   Input{Policy: withPlacement(duplicate(), []string{"member-9"}, nil), Clusters: three()},
			want: "", wantMsg: "no MemberCluster matches the policy's placement", nilPlace: true},
		{name: "no clusters at all",
			in:   Input{Policy: divide(), Replicas: ptr.To[int32](3)},
			want: "", wantMsg: "no MemberCluster matches the policy's placement", nilPlace: true},
		{name: "cluster being deleted is excluded",
			in:   Input{Policy: duplicate(), Clusters: []v1alpha1.MemberCluster{three()[0], deleting(three()[1]), three()[2]}},
			want: "member-1 member-3", wantMsg: "2/3 clusters: member-2 is being deleted"},
		{name: "cluster being deleted is excluded even where placed",
			in: Input{Policy: duplicate(), Clusters: []v1alpha1.MemberCluster{three()[0], deleting(three()[1])},
				Current: placed("member-1", nil, "member-2", nil)},
			want: "member-1", wantMsg: "1/2 clusters: member-2 is being deleted"},
		{name: "every candidate excluded",
			in:   Input{Policy: duplicate(), Clusters: []v1alpha1.MemberCluster{deleting(three()[0])}},
			want: "", wantMsg: "0/1 clusters: member-1 is being deleted", nilPlace: true},
		{name: "NoSchedule keeps a new cluster out",
			in:   Input{Policy: duplicate(), Clusters: three(unreachable)},
			want: "member-1 member-2", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/unreachable:NoSchedule"},
		{name: "NoSchedule keeps a placed cluster",
			in:   Input{Policy: duplicate(), Clusters: three(unreachable), Current: placed("member-3", nil)},
			want: "member-1 member-2 member-3", wantMsg: "3/3 clusters"},
		{name: "NoExecute removes a placed cluster",
			in:   Input{Policy: duplicate(), Clusters: three(notReady), Current: placed("member-1", nil, "member-2", nil, "member-3", nil)},
			want: "member-1 member-2", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/not-ready:NoExecute"},
		{name: "PreferNoSchedule does not block",
			in:   Input{Policy: duplicate(), Clusters: three(preferNot)},
			want: "member-1 member-2 member-3", wantMsg: "3/3 clusters"},
		{name: "first blocking taint is reported",
			in:   Input{Policy: duplicate(), Clusters: three(preferNot, unreachable, notReady)},
			want: "member-1 member-2", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/unreachable:NoSchedule"},
		{name: "several exclusions in name order",
			in:   Input{Policy: duplicate(), Clusters: []v1alpha1.MemberCluster{three(notReady)[2], deleting(three()[0]), three()[1]}},
			want: "member-2", wantMsg: "1/3 clusters: member-1 is being deleted, member-3 untolerated taint flotilla.io/not-ready:NoExecute"},
		{name: "divide 6 over 3 equal clusters",
			in:   Input{Policy: divide(), Replicas: ptr.To[int32](6), Clusters: three()},
			want: "member-1=2 member-2=2 member-3=2", wantMsg: "3/3 clusters"},
		{name: "divide 9 over 3 equal clusters",
			in:   Input{Policy: divide(), Replicas: ptr.To[int32](9), Clusters: three()},
			want: "member-1=3 member-2=3 member-3=3", wantMsg: "3/3 clusters"},
		{name: "divide over the selected clusters only",
			in:   Input{Policy: withPlacement(divide(), nil, eu), Replicas: ptr.To[int32](6), Clusters: three()},
			want: "member-1=3 member-2=3", wantMsg: "2/2 clusters"},
		{name: "divide skips a NoSchedule cluster it is not on",
			in:   Input{Policy: divide(), Replicas: ptr.To[int32](6), Clusters: three(unreachable)},
			want: "member-1=3 member-2=3", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/unreachable:NoSchedule"},
		{name: "weights 2:1",
			in:   Input{Policy: withPlacement(divide(weight("member-1", 2), weight("member-2", 1)), []string{"member-1", "member-2"}, nil), Replicas: ptr.To[int32](6), Clusters: three()},
			want: "member-1=4 member-2=2", wantMsg: "2/2 clusters"},
		{name: "unlisted clusters get no replicas and are left out",
			in:   Input{Policy: divide(weight("member-1", 2), weight("member-2", 1)), Replicas: ptr.To[int32](9), Clusters: three()},
			want: "member-1=6 member-2=3", wantMsg: "2/3 clusters"},
		{name: "weight entries for unknown clusters are ignored",
			in:   Input{Policy: divide(weight("member-1", 1), weight("member-9", 100), weight("member-3", 1)), Replicas: ptr.To[int32](4), Clusters: three()},
			want: "member-1=2 member-3=2", wantMsg: "2/3 clusters"},
		{name: "max caps a cluster, the rest goes to the others",
			in:   Input{Policy: divide(bounded("member-1", 1, nil, ptr.To[int32](2)), weight("member-2", 1), weight("member-3", 1)), Replicas: ptr.To[int32](10), Clusters: three()},
			want: "member-1=2 member-2=4 member-3=4", wantMsg: "3/3 clusters"},
		{name: "min raises a cluster",
			in:   Input{Policy: divide(bounded("member-1", 1, ptr.To[int32](4), nil), weight("member-2", 1), weight("member-3", 1)), Replicas: ptr.To[int32](6), Clusters: three()},
			want: "member-1=4 member-2=1 member-3=1", wantMsg: "3/3 clusters"},
		{name: "min gives a zero-weight cluster replicas",
			in:   Input{Policy: divide(weight("member-1", 1), bounded("member-2", 0, ptr.To[int32](2), nil)), Replicas: ptr.To[int32](6), Clusters: three()},
			want: "member-1=4 member-2=2", wantMsg: "2/3 clusters"},
		{name: "maximums that cannot hold the total",
			in: Input{Policy: withPlacement(divide(bounded("member-1", 1, nil, ptr.To[int32](1)), bounded("member-2", 1, nil, ptr.To[int32](2))), []string{"member-1", "member-2"}, nil),
				Replicas: ptr.To[int32](10), Clusters: three()},
			want: "member-1=1 member-2=2", wantMsg: "2/2 clusters"},
		{name: "NoSchedule cluster holding 3 keeps at most 3 on scale up",
			in: Input{Policy: divide(), Replicas: ptr.To[int32](15), Clusters: three(unreachable),
				Current: placed("member-1", 3, "member-2", 3, "member-3", 3)},
			want: "member-1=6 member-2=6 member-3=3", wantMsg: "3/3 clusters"},
		{name: "NoSchedule cluster holding 3 shrinks on scale down",
			in: Input{Policy: divide(), Replicas: ptr.To[int32](3), Clusters: three(unreachable),
				Current: placed("member-1", 3, "member-2", 3, "member-3", 3)},
			want: "member-1=1 member-2=1 member-3=1", wantMsg: "3/3 clusters"},
		{name: "NoSchedule cap lowers a weight's max",
			in: Input{Policy: divide(weight("member-1", 1), weight("member-2", 1), bounded("member-3", 1, ptr.To[int32](5), ptr.To[int32](10))),
				Replicas: ptr.To[int32](12), Clusters: three(unreachable), Current: placed("member-3", 2)},
			want: "member-1=5 member-2=5 member-3=2", wantMsg: "3/3 clusters"},
		{name: "NoExecute cluster holding replicas loses them",
			in: Input{Policy: divide(), Replicas: ptr.To[int32](6), Clusters: three(notReady),
				Current: placed("member-1", 2, "member-2", 2, "member-3", 2)},
			want: "member-1=3 member-2=3", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/not-ready:NoExecute"},
		{name: "total 0 keeps every cluster with 0",
			in:   Input{Policy: divide(), Replicas: ptr.To[int32](0), Clusters: three()},
			want: "member-1=0 member-2=0 member-3=0", wantMsg: "3/3 clusters"},
		{name: "total 0 keeps the weighted clusters with 0, unlisted ones are not placed",
			in:   Input{Policy: divide(weight("member-1", 1)), Replicas: ptr.To[int32](0), Clusters: three()},
			want: "member-1=0", wantMsg: "1/3 clusters"},
		{name: "capped weighted clusters do not spill into unlisted ones",
			in:   Input{Policy: divide(weightMax("member-1", 1, 1), weightMax("member-2", 1, 2)), Replicas: ptr.To[int32](10), Clusters: three()},
			want: "member-1=1 member-2=2", wantMsg: "2/3 clusters"},
		{name: "divide without replicas behaves like duplicate",
			in:   Input{Policy: divide(weight("member-1", 1)), Clusters: three(unreachable)},
			want: "member-1 member-2", wantMsg: "2/3 clusters: member-3 untolerated taint flotilla.io/unreachable:NoSchedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Schedule(tt.in)
			if s := format(got.Placement); s != tt.want {
				t.Errorf("placement = %q, want %q", s, tt.want)
			}
			if got.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", got.Message, tt.wantMsg)
			}
			if tt.nilPlace && got.Placement != nil {
				t.Errorf("placement = %#v, want nil", got.Placement)
			}
		})
	}
}

func TestScheduleRemainderGoesToOneCluster(t *testing.T) {
	got := Schedule(Input{Policy: divide(), Replicas: ptr.To[int32](2), Clusters: three(), Seed: "shop/web"})
	if len(got.Placement) != 2 {
		t.Fatalf("placement %q, want 2 clusters with 1 each", format(got.Placement))
	}
	for _, p := range got.Placement {
		if p.Replicas == nil || *p.Replicas != 1 {
			t.Errorf("placement %q, want 1 replica per cluster", format(got.Placement))
		}
	}
	if got.Message != "2/3 clusters" {
		t.Errorf("message = %q, want %q", got.Message, "2/3 clusters")
	}
	if !slices.IsSortedFunc(got.Placement, func(a, b v1alpha1.ClusterPlacement) int { return strings.Compare(a.Cluster, b.Cluster) }) {
		t.Errorf("placement %q is not in name order", format(got.Placement))
	}
}

func TestScheduleIsDeterministic(t *testing.T) {
	clusters := []v1alpha1.MemberCluster{
		cluster("a", nil), cluster("b", nil), cluster("c", nil, unreachable), cluster("d", nil), cluster("e", nil, notReady), deleting(cluster("f", nil)),
	}
	current := placed("a", 4, "c", 3, "e", 1)
	inputs := []struct {
		name   string
		policy *v1alpha1.PropagationSpec
		total  *int32
	}{
		{"duplicate", duplicate(), nil},
		{"divide with a remainder", divide(), ptr.To[int32](11)},
		{"weighted", divide(weight("a", 3), weight("b", 2), weight("c", 5), weight("d", 1)), ptr.To[int32](17)},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			base := Input{Policy: in.policy, Replicas: in.total, Clusters: clusters, Current: current, Seed: "shop/web"}
			want := Schedule(base)
			if again := Schedule(base); !reflect.DeepEqual(again, want) {
				t.Errorf("second run %q (%s), first %q (%s)", format(again.Placement), again.Message, format(want.Placement), want.Message)
			}
			reversed := slices.Clone(clusters)
			slices.Reverse(reversed)
			rotated := append(slices.Clone(clusters[3:]), clusters[:3]...)
			shuffledCurrent := slices.Clone(current)
			slices.Reverse(shuffledCurrent)
			for _, variant := range []Input{
				{Policy: in.policy, Replicas: in.total, Clusters: reversed, Current: current, Seed: "shop/web"},
				{Policy: in.policy, Replicas: in.total, Clusters: rotated, Current: shuffledCurrent, Seed: "shop/web"},
			} {
				if got := Schedule(variant); !reflect.DeepEqual(got, want) {
					t.Errorf("shuffled input gave %q (%s), want %q (%s)", format(got.Placement), got.Message, format(want.Placement), want.Message)
				}
			}
			if got := clusters[0].Name + clusters[5].Name; got != "af" {
				t.Errorf("Schedule reordered the caller's clusters: first/last %q", got)
			}
			if in.total != nil {
				var sum int32
				for _, p := range want.Placement {
					sum += *p.Replicas
				}
				if sum != *in.total {
					t.Errorf("placement %q sums to %d, want %d", format(want.Placement), sum, *in.total)
				}
			}
		})
	}
}
