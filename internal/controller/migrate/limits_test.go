package migrate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

func times(ts ...time.Time) []time.Time { return ts }

func noRoom(string, int32) bool { return false }
func room(string, int32) bool   { return true }

func active(cluster string, replicas, moved, count int32, since time.Time) v1alpha1.CapacityLimit {
	return v1alpha1.CapacityLimit{Cluster: cluster, Replicas: replicas, Unschedulable: moved, Count: count, Since: metav1.NewTime(since)}
}

func lifted(l v1alpha1.CapacityLimit, at time.Time) v1alpha1.CapacityLimit {
	ts := metav1.NewTime(at)
	l.LiftedAt = &ts
	return l
}

func TestNextLimits(t *testing.T) {
	const threshold = time.Minute
	tests := []struct {
		name        string
		current     []v1alpha1.CapacityLimit
		obs         []observation
		room        roomFunc
		want        map[string]int32 // active limits
		wantLifted  []string
		wantCount   map[string]int32
		wantMoved   map[string]int32 // Unschedulable of active limits
		wantRecheck time.Duration
		wantChanges int
	}{
		{
			name: "nothing Unschedulable: no limit",
			obs:  []observation{{cluster: "a", placed: 5, pods: 5}},
			room: noRoom,
		},
		{
			name:        "Unschedulable, but not for long enough: look again when it will be",
			obs:         []observation{{cluster: "a", placed: 5, pods: 5, unschedulable: times(ago(20*time.Second), ago(50*time.Second))}},
			room:        noRoom,
			wantRecheck: 10 * time.Second,
		},
		{
			name:        "3 of 5 Unschedulable past the threshold: limited to the 2 it runs",
			obs:         []observation{{cluster: "a", placed: 5, pods: 5, unschedulable: times(ago(2*time.Minute), ago(2*time.Minute), ago(time.Minute))}},
			room:        noRoom,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantRecheck: baseHold,
			wantChanges: 1,
		},
		{
			name:        "pods not created yet (ordered StatefulSet): limited to those scheduled",
			obs:         []observation{{cluster: "a", placed: 5, pods: 3, unschedulable: times(ago(2 * time.Minute))}},
			room:        noRoom,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantRecheck: baseHold,
			wantChanges: 1,
		},
		{
			name: "a rollout's surge pod pending: no limit",
			obs:  []observation{{cluster: "a", placed: 5, pods: 6, unschedulable: times(ago(2 * time.Minute))}},
			room: noRoom,
		},
		{
			name:        "an active limit the cluster keeps to: unchanged while held",
			current:     []v1alpha1.CapacityLimit{active("a", 2, 3, 1, ago(30*time.Second))},
			obs:         []observation{{cluster: "a", placed: 2, pods: 2}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantRecheck: 30 * time.Second,
		},
		{
			name:        "held long enough but no room: kept, looked at again in a while",
			current:     []v1alpha1.CapacityLimit{active("a", 2, 3, 1, ago(5*time.Minute))},
			obs:         []observation{{cluster: "a", placed: 2, pods: 2}},
			room:        noRoom,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantRecheck: roomRecheck,
		},
		{
			name:        "held long enough and room again: lifted",
			current:     []v1alpha1.CapacityLimit{active("a", 2, 3, 1, ago(5*time.Minute))},
			obs:         []observation{{cluster: "a", placed: 2, pods: 2}},
			room:        room,
			wantLifted:  []string{"a"},
			wantChanges: 1,
		},
		{
			name:        "room, but a pod is still Unschedulable there: kept",
			current:     []v1alpha1.CapacityLimit{active("a", 2, 3, 1, ago(5*time.Minute))},
			obs:         []observation{{cluster: "a", placed: 2, pods: 2, unschedulable: times(ago(time.Second))}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantRecheck: threshold - time.Second,
		},
		{
			name:        "set again after a lift: held twice as long",
			current:     []v1alpha1.CapacityLimit{lifted(active("a", 2, 3, 1, ago(10*time.Minute)), ago(5*time.Minute))},
			obs:         []observation{{cluster: "a", placed: 5, pods: 5, unschedulable: times(ago(2*time.Minute), ago(2*time.Minute), ago(2*time.Minute))}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 2},
			wantRecheck: 2 * baseHold,
			wantChanges: 1,
		},
		{
			name:        "lowered further while held: same count, more moved",
			current:     []v1alpha1.CapacityLimit{active("a", 2, 3, 2, ago(30*time.Second))},
			obs:         []observation{{cluster: "a", placed: 2, pods: 2, unschedulable: times(ago(2 * time.Minute))}},
			room:        room,
			want:        map[string]int32{"a": 1},
			wantCount:   map[string]int32{"a": 2},
			wantMoved:   map[string]int32{"a": 4},
			wantRecheck: 2 * baseHold,
			wantChanges: 1,
		},
		{
			name:        "lowered while the placement holds more than the limit (no room elsewhere): moved counts from the first placement",
			current:     []v1alpha1.CapacityLimit{active("a", 3, 2, 1, ago(30*time.Second))},
			obs:         []observation{{cluster: "a", placed: 5, pods: 5, unschedulable: times(ago(2*time.Minute), ago(2*time.Minute), ago(2*time.Minute))}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantMoved:   map[string]int32{"a": 3},
			wantRecheck: baseHold,
			wantChanges: 1,
		},
		{
			name:        "lowered after a scale-down below the limit: only what moves now is added",
			current:     []v1alpha1.CapacityLimit{active("a", 4, 6, 1, ago(30*time.Second))},
			obs:         []observation{{cluster: "a", placed: 3, pods: 3, unschedulable: times(ago(2 * time.Minute))}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantMoved:   map[string]int32{"a": 7},
			wantRecheck: baseHold,
			wantChanges: 1,
		},
		{
			name:        "set again long after a lift: counted afresh",
			current:     []v1alpha1.CapacityLimit{lifted(active("a", 2, 3, 4, ago(4*time.Hour)), ago(3*time.Hour))},
			obs:         []observation{{cluster: "a", placed: 5, pods: 5, unschedulable: times(ago(2*time.Minute), ago(2*time.Minute), ago(2*time.Minute))}},
			room:        room,
			want:        map[string]int32{"a": 2},
			wantCount:   map[string]int32{"a": 1},
			wantMoved:   map[string]int32{"a": 3},
			wantRecheck: baseHold,
			wantChanges: 1,
		},
		{
			name:        "a lifted limit is looked at again when it is to be forgotten",
			current:     []v1alpha1.CapacityLimit{lifted(active("a", 2, 3, 1, ago(2*time.Hour)), ago(time.Hour))},
			obs:         []observation{{cluster: "a", placed: 5, pods: 5}},
			room:        room,
			wantLifted:  []string{"a"},
			wantRecheck: forgetAfter - time.Hour,
		},
		{
			name:    "a lifted limit is forgotten after a while",
			current: []v1alpha1.CapacityLimit{lifted(active("a", 2, 3, 3, ago(4*time.Hour)), ago(3*time.Hour))},
			room:    room,
		},
		{
			name:        "a limit on a cluster no longer placed is lifted when there is room",
			current:     []v1alpha1.CapacityLimit{active("gone", 0, 4, 1, ago(time.Hour))},
			room:        room,
			wantLifted:  []string{"gone"},
			wantChanges: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, recheck, changes := nextLimits(tt.current, tt.obs, threshold, tt.room, t0)
			gotActive := map[string]int32{}
			var gotLifted []string
			for _, l := range out {
				if l.LiftedAt != nil {
					gotLifted = append(gotLifted, l.Cluster)
					continue
				}
				gotActive[l.Cluster] = l.Replicas
				if want, ok := tt.wantCount[l.Cluster]; ok && l.Count != want {
					t.Errorf("count of %s = %d, want %d", l.Cluster, l.Count, want)
				}
				if want, ok := tt.wantMoved[l.Cluster]; ok && l.Unschedulable != want {
					t.Errorf("unschedulable of %s = %d, want %d", l.Cluster, l.Unschedulable, want)
				}
			}
			if len(gotActive) != len(tt.want) {
				t.Errorf("active limits = %v, want %v", gotActive, tt.want)
			}
			for c, n := range tt.want {
				if gotActive[c] != n {
					t.Errorf("limit of %s = %d, want %d (all: %v)", c, gotActive[c], n, gotActive)
				}
			}
			if len(gotLifted) != len(tt.wantLifted) {
				t.Errorf("lifted = %v, want %v", gotLifted, tt.wantLifted)
			}
			if recheck != tt.wantRecheck {
				t.Errorf("recheck = %s, want %s", recheck, tt.wantRecheck)
			}
			if len(changes) != tt.wantChanges {
				t.Errorf("changes = %+v, want %d", changes, tt.wantChanges)
			}
		})
	}
}

func TestHoldFor(t *testing.T) {
	for count, want := range map[int32]time.Duration{0: time.Minute, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 7: time.Hour, 40: time.Hour} {
		if got := holdFor(count); got != want {
			t.Errorf("holdFor(%d) = %s, want %s", count, got, want)
		}
	}
}
