package tainttoleration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// added is a NoExecute taint added ago before now.
func added(key string, ago time.Duration) corev1.Taint {
	t := taint(key, "", corev1.TaintEffectNoExecute)
	t.TimeAdded = &metav1.Time{Time: now.Add(-ago)}
	return t
}

func exists(key string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
}

func forSeconds(tol corev1.Toleration, s int64) corev1.Toleration {
	tol.TolerationSeconds = ptr.To(s)
	return tol
}

func cluster(name string, taints ...corev1.Taint) *v1alpha1.MemberCluster {
	c := &v1alpha1.MemberCluster{Spec: v1alpha1.MemberClusterSpec{Taints: taints}}
	c.Name = name
	return c
}

func unit(placed []string, tols ...corev1.Toleration) *framework.Unit {
	u := &framework.Unit{Key: "default/web", Placement: &v1alpha1.Placement{Tolerations: tols}}
	for _, n := range placed {
		u.Current = append(u.Current, v1alpha1.ClusterPlacement{Cluster: n})
	}
	return u
}

func plugin(t testing.TB) *TaintToleration {
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tt := p.(*TaintToleration)
	tt.now = func() time.Time { return now }
	return tt
}

const (
	unreachable = v1alpha1.TaintUnreachable
	maintenance = "example.com/maintenance"
)

func TestFilter(t *testing.T) {
	noSchedule, noExecute, prefer := corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule
	tests := []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		placed []string
		want   string // "" when the cluster passes
	}{
		{name: "no taints"},
		{name: "NoSchedule, not placed", taints: []corev1.Taint{taint(maintenance, "", noSchedule)},
			want: "untolerated taint " + maintenance},
		{name: "NoSchedule, placed: keeps it", taints: []corev1.Taint{taint(maintenance, "", noSchedule)},
			placed: []string{"other", "member-1"}},
		{name: "NoSchedule, placed elsewhere", taints: []corev1.Taint{taint(maintenance, "", noSchedule)},
			placed: []string{"other"}, want: "untolerated taint " + maintenance},
		{name: "NoSchedule tolerated by Exists", taints: []corev1.Taint{taint(maintenance, "x", noSchedule)},
			tols: []corev1.Toleration{exists(maintenance, "")}},
		{name: "NoSchedule tolerated by Equal", taints: []corev1.Taint{taint(maintenance, "x", noSchedule)},
			tols: []corev1.Toleration{{Key: maintenance, Value: "x", Effect: noSchedule}}},
		{name: "Equal with another value", taints: []corev1.Taint{taint(maintenance, "x", noSchedule)},
			tols: []corev1.Toleration{{Key: maintenance, Operator: corev1.TolerationOpEqual, Value: "y"}},
			want: "untolerated taint " + maintenance},
		{name: "toleration for another effect", taints: []corev1.Taint{taint(maintenance, "", noSchedule)},
			tols: []corev1.Toleration{exists(maintenance, noExecute)}, want: "untolerated taint " + maintenance},
		{name: "empty key tolerates everything", taints: []corev1.Taint{taint(maintenance, "", noSchedule), taint(unreachable, "", noExecute)},
			tols: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "Lt compares integers", taints: []corev1.Taint{taint("example.com/tier", "3", noSchedule)},
			tols: []corev1.Toleration{{Key: "example.com/tier", Operator: corev1.TolerationOpLt, Value: "5"}}},
		{name: "Gt fails on a smaller value", taints: []corev1.Taint{taint("example.com/tier", "3", noSchedule)},
			tols: []corev1.Toleration{{Key: "example.com/tier", Operator: corev1.TolerationOpGt, Value: "5"}},
			want: "untolerated taint example.com/tier"},
		{name: "NoExecute, placed: removed", taints: []corev1.Taint{taint(unreachable, "", noExecute)},
			placed: []string{"member-1"}, want: "untolerated taint " + unreachable},
		{name: "NoExecute tolerated for ever", taints: []corev1.Taint{added(unreachable, time.Hour)},
			tols: []corev1.Toleration{exists(unreachable, noExecute)}, placed: []string{"member-1"}},
		{name: "NoExecute within tolerationSeconds", taints: []corev1.Taint{added(unreachable, 100*time.Second)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 300)}},
		{name: "NoExecute at tolerationSeconds", taints: []corev1.Taint{added(unreachable, 300*time.Second)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 300)}, want: "untolerated taint " + unreachable},
		{name: "NoExecute past tolerationSeconds", taints: []corev1.Taint{added(unreachable, 400*time.Second)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 300)}, placed: []string{"member-1"},
			want: "untolerated taint " + unreachable},
		{name: "NoExecute without timeAdded", taints: []corev1.Taint{taint(unreachable, "", noExecute)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 300)}},
		{name: "tolerationSeconds 0", taints: []corev1.Taint{taint(unreachable, "", noExecute)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 0)}, want: "untolerated taint " + unreachable},
		{name: "shortest tolerationSeconds wins", taints: []corev1.Taint{added(unreachable, 120*time.Second)},
			tols: []corev1.Toleration{exists(unreachable, ""), forSeconds(exists(unreachable, noExecute), 60)},
			want: "untolerated taint " + unreachable},
		{name: "huge tolerationSeconds", taints: []corev1.Taint{added(unreachable, 1000*time.Hour)},
			tols: []corev1.Toleration{forSeconds(exists(unreachable, noExecute), 1<<62)}},
		{name: "tolerationSeconds ignored for NoSchedule", taints: []corev1.Taint{taint(maintenance, "", noSchedule)},
			tols: []corev1.Toleration{forSeconds(exists(maintenance, ""), 0)}},
		{name: "PreferNoSchedule does not filter", taints: []corev1.Taint{taint(maintenance, "", prefer)}},
		{name: "first blocking taint named", taints: []corev1.Taint{taint("a", "", prefer), taint(maintenance, "", noSchedule), taint(unreachable, "", noExecute)},
			tols: []corev1.Toleration{exists(maintenance, "")}, want: "untolerated taint " + unreachable},
	}
	p := plugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, c := unit(tt.placed, tt.tols...), cluster("member-1", tt.taints...)
			for _, prepared := range []bool{true, false} {
				state := framework.CycleState{}
				if prepared {
					p.Prepare(context.Background(), state, u, []*v1alpha1.MemberCluster{c})
				}
				s := p.Filter(context.Background(), state, u, c)
				switch {
				case tt.want == "" && !s.IsSuccess():
					t.Errorf("prepared=%v: excluded with %q, want pass", prepared, s.Reason)
				case tt.want != "" && s.IsSuccess():
					t.Errorf("prepared=%v: passed, want %q", prepared, tt.want)
				case tt.want != "" && (s.Code != framework.Unschedulable || s.Reason != tt.want):
					t.Errorf("prepared=%v: got %d %q, want Unschedulable %q", prepared, s.Code, s.Reason, tt.want)
				}
			}
		})
	}
}

func TestScore(t *testing.T) {
	prefer := func(keys ...string) []corev1.Taint {
		var out []corev1.Taint
		for _, k := range keys {
			out = append(out, taint(k, "", corev1.TaintEffectPreferNoSchedule))
		}
		return out
	}
	tests := []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		want   int64
	}{
		{name: "no taints", want: 100},
		{name: "one", taints: prefer("a"), want: 90},
		{name: "two", taints: prefer("a", "b"), want: 80},
		{name: "one of two tolerated", taints: prefer("a", "b"), tols: []corev1.Toleration{exists("b", corev1.TaintEffectPreferNoSchedule)}, want: 90},
		{name: "all tolerated", taints: prefer("a", "b"), tols: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, want: 100},
		{name: "not below 0", taints: prefer("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"), want: 0},
		{name: "other effects ignored", taints: []corev1.Taint{taint("a", "", corev1.TaintEffectNoSchedule), taint("b", "", corev1.TaintEffectNoExecute)}, want: 100},
	}
	p := plugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, c := unit(nil, tt.tols...), cluster("member-1", tt.taints...)
			state := framework.CycleState{}
			p.Prepare(context.Background(), state, u, nil)
			got, s := p.Score(context.Background(), state, u, c)
			if !s.IsSuccess() || got != tt.want {
				t.Errorf("Score = %d, %v; want %d", got, s, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, args := range []string{"", "null", "{}"} {
		if _, err := New([]byte(args)); err != nil {
			t.Errorf("New(%q): %v", args, err)
		}
	}
	for _, args := range []string{`{"penalty":5}`, `"x"`} {
		if _, err := New([]byte(args)); err == nil {
			t.Errorf("New(%q) accepted", args)
		}
	}
}

// BenchmarkFilterScore filters and scores 100 clusters, every other one
// with a tolerated NoExecute taint and a PreferNoSchedule taint, against
// three tolerations.
func BenchmarkFilterScore(b *testing.B) {
	clusters := make([]*v1alpha1.MemberCluster, 100)
	for i := range clusters {
		c := cluster(fmt.Sprint("member-", i))
		if i%2 == 0 {
			c.Spec.Taints = []corev1.Taint{added(unreachable, time.Minute), taint(maintenance, "", corev1.TaintEffectPreferNoSchedule)}
		}
		clusters[i] = c
	}
	u := unit([]string{"member-3"}, exists("example.com/gpu", corev1.TaintEffectNoSchedule),
		forSeconds(exists(unreachable, corev1.TaintEffectNoExecute), 300), exists(v1alpha1.TaintNotReady, ""))
	p := plugin(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		state := framework.CycleState{}
		p.Prepare(ctx, state, u, clusters)
		for _, c := range clusters {
			if !p.Filter(ctx, state, u, c).IsSuccess() {
				b.Fatal("excluded")
			}
			p.Score(ctx, state, u, c)
		}
	}
}
