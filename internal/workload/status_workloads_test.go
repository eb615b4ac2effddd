package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func statefulSet(t *testing.T, generation int64, status appsv1.StatefulSetStatus) *unstructured.Unstructured {
	return toUnstructured(t, &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Generation: generation},
		Status:     status,
	})
}

// sts is a member StatefulSet status with n replicas, of which updated run
// the update revision.
func sts(n, updated int32, current, update string) appsv1.StatefulSetStatus {
	return appsv1.StatefulSetStatus{
		ObservedGeneration: memberGeneration, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
		CurrentReplicas: n - updated, UpdatedReplicas: updated, CurrentRevision: current, UpdateRevision: update,
	}
}

func TestAggregateStatefulSet(t *testing.T) {
	tests := []struct {
		name    string
		members map[string]appsv1.StatefulSetStatus
		want    appsv1.StatefulSetStatus
	}{
		{
			name: "every member rolled out: the first member's revision",
			members: map[string]appsv1.StatefulSetStatus{
				"b": sts(2, 2, "db-b2", "db-b2"),
				"a": sts(1, 1, "db-a1", "db-a1"),
			},
			want: appsv1.StatefulSetStatus{ObservedGeneration: templateGen, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				UpdatedReplicas: 3, CurrentRevision: "db-a1", UpdateRevision: "db-a1"},
		},
		{
			name: "a member rolling out: its revisions",
			members: map[string]appsv1.StatefulSetStatus{
				"a": sts(2, 2, "db-1", "db-1"),
				"b": sts(3, 1, "db-1", "db-2"),
				"c": sts(3, 2, "db-0", "db-2"),
			},
			want: appsv1.StatefulSetStatus{ObservedGeneration: templateGen, Replicas: 8, ReadyReplicas: 8, AvailableReplicas: 8,
				CurrentReplicas: 3, UpdatedReplicas: 5, CurrentRevision: "db-1", UpdateRevision: "db-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []Member
			for cluster, s := range tt.members {
				members = append(members, Member{Cluster: cluster, Object: statefulSet(t, memberGeneration, s), Current: true})
			}
			template := statefulSet(t, templateGen, appsv1.StatefulSetStatus{})
			status, changed := AggregateStatus(template, members, t1)
			if !changed {
				t.Errorf("changed = false, want true")
			}
			if diff := cmp.Diff(tt.want, decodeInto[appsv1.StatefulSetStatus](t, status)); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
			if _, changed := AggregateStatus(withStatus(t, template, status), members, t2); changed {
				t.Errorf("second aggregation: changed = true, want false")
			}
		})
	}
}

func TestAggregateStatefulSetNoStatusYet(t *testing.T) {
	// A fresh template reads back with the non-omitempty counts at zero; a
	// copy that is missing changes nothing of that.
	template := statefulSet(t, 1, appsv1.StatefulSetStatus{})
	status, changed := AggregateStatus(template, []Member{{Cluster: "a"}}, t1)
	if changed {
		t.Errorf("changed = true, want false (status %v)", status)
	}
	want := map[string]any{"replicas": int64(0), "availableReplicas": int64(0)}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

func TestAggregateDaemonSet(t *testing.T) {
	ds := func(generation int64, s appsv1.DaemonSetStatus) *unstructured.Unstructured {
		return toUnstructured(t, &appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Generation: generation},
			Status:     s,
		})
	}
	members := []Member{
		{Cluster: "a", Current: true, Object: ds(memberGeneration, appsv1.DaemonSetStatus{ObservedGeneration: memberGeneration,
			CurrentNumberScheduled: 3, DesiredNumberScheduled: 3, NumberReady: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3})},
		{Cluster: "b", Current: true, Object: ds(memberGeneration, appsv1.DaemonSetStatus{ObservedGeneration: memberGeneration,
			CurrentNumberScheduled: 5, NumberMisscheduled: 1, DesiredNumberScheduled: 5, NumberReady: 4,
			UpdatedNumberScheduled: 2, NumberAvailable: 4, NumberUnavailable: 1})},
	}
	status, changed := AggregateStatus(ds(templateGen, appsv1.DaemonSetStatus{}), members, t1)
	if !changed {
		t.Errorf("changed = false, want true")
	}
	want := appsv1.DaemonSetStatus{ObservedGeneration: templateGen, CurrentNumberScheduled: 8, NumberMisscheduled: 1,
		DesiredNumberScheduled: 8, NumberReady: 7, UpdatedNumberScheduled: 5, NumberAvailable: 7, NumberUnavailable: 1}
	if diff := cmp.Diff(want, decodeInto[appsv1.DaemonSetStatus](t, status)); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}

	// One member behind: observedGeneration keeps the template's value.
	members[1].Current = false
	status, _ = AggregateStatus(ds(templateGen, appsv1.DaemonSetStatus{ObservedGeneration: 2}), members, t1)
	if got := status["observedGeneration"]; got != int64(2) {
		t.Errorf("observedGeneration = %#v, want 2", got)
	}
}

func TestAggregateReplicaSet(t *testing.T) {
	rs := func(generation int64, s appsv1.ReplicaSetStatus) *unstructured.Unstructured {
		return toUnstructured(t, &appsv1.ReplicaSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Generation: generation},
			Status:     s,
		})
	}
	members := []Member{
		{Cluster: "a", Current: true, Object: rs(memberGeneration, appsv1.ReplicaSetStatus{ObservedGeneration: memberGeneration,
			Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1})},
		{Cluster: "b", Current: true, Object: rs(memberGeneration, appsv1.ReplicaSetStatus{ObservedGeneration: memberGeneration,
			Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 1})},
	}
	status, _ := AggregateStatus(rs(templateGen, appsv1.ReplicaSetStatus{}), members, t1)
	want := appsv1.ReplicaSetStatus{ObservedGeneration: templateGen, Replicas: 5, FullyLabeledReplicas: 5, ReadyReplicas: 3, AvailableReplicas: 2}
	if diff := cmp.Diff(want, decodeInto[appsv1.ReplicaSetStatus](t, status)); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}
