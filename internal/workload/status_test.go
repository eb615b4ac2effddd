package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	t1 = metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	t2 = metav1.NewTime(time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC))
	t3 = metav1.NewTime(time.Date(2026, 3, 1, 10, 9, 0, 0, time.UTC))
)

// memberGeneration is the generation of every member copy in these tests;
// members count generations on their own.
const memberGeneration = 7

// toUnstructured converts a typed object the way it reads back from the
// apiserver.
func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("converting %T: %v", obj, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// decodeInto decodes an aggregated status into a typed status.
func decodeInto[S any](t *testing.T, status map[string]any) S {
	t.Helper()
	var s S
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status, &s); err != nil {
		t.Fatalf("decoding status: %v", err)
	}
	return s
}

// withStatus returns a copy of template whose status is status, read back
// through JSON as the apiserver would return it after a write.
func withStatus(t *testing.T, template *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := template.DeepCopy()
	obj.Object["status"] = status
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	back := &unstructured.Unstructured{}
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return back
}

func deploymentTemplate(t testing.TB, generation int64, status appsv1.DeploymentStatus) *unstructured.Unstructured {
	return toUnstructured(t, &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: generation},
		Status:     status,
	})
}

// deploymentCopy is a member's copy with the given status.
func deploymentCopy(t testing.TB, status appsv1.DeploymentStatus) *unstructured.Unstructured {
	return deploymentTemplate(t, memberGeneration, status)
}

// rolledOut is the status of a member copy whose rollout finished.
func rolledOut(replicas int32) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{
		ObservedGeneration: memberGeneration,
		Replicas:           replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
}

// unavailable is a member copy status still waiting for available pods.
func unavailable(replicas, ready int32) appsv1.DeploymentStatus {
	s := rolledOut(replicas)
	s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas = ready, ready, replicas-ready
	s.Conditions[0].Status, s.Conditions[0].Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
	s.Conditions[1].Reason = "ReplicaSetUpdated"
	return s
}

func deploymentCondition(status corev1.ConditionStatus, reason, message string, transition, update metav1.Time) []appsv1.DeploymentCondition {
	return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: status, Reason: reason, Message: message,
		LastTransitionTime: transition, LastUpdateTime: update}}
}

// conditions joins condition lists.
func conditions(lists ...[]appsv1.DeploymentCondition) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func progressing(status corev1.ConditionStatus, reason, message string, at metav1.Time) []appsv1.DeploymentCondition {
	return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: message,
		LastTransitionTime: at, LastUpdateTime: at}}
}

const (
	allAvailable  = "Deployment has minimum availability in every cluster."
	allRolledOut  = "Deployment has been rolled out in every cluster."
	templateGen   = 4
	previouslySet = 3
)

func TestAggregateDeployment(t *testing.T) {
	previous := appsv1.DeploymentStatus{ObservedGeneration: previouslySet}
	tests := []struct {
		name    string
		members []Member
		want    appsv1.DeploymentStatus
	}{
		{
			name: "three members rolled out",
			members: []Member{
				{Cluster: "member-3", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, rolledOut(2)), Current: true},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: templateGen, Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionTrue, "MinimumReplicasAvailable", allAvailable, t1, t1),
					progressing(corev1.ConditionTrue, "NewReplicaSetAvailable", allRolledOut, t1)),
			},
		},
		{
			name: "a member not holding the current generation keeps observedGeneration",
			members: []Member{
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, rolledOut(2)), Current: false},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: previouslySet, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionTrue, "MinimumReplicasAvailable", allAvailable, t1, t1),
					progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "member-2: Outdated", t1)),
			},
		},
		{
			name: "a member controller not yet observing its copy keeps observedGeneration",
			members: []Member{
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, func() appsv1.DeploymentStatus {
					s := rolledOut(2)
					s.ObservedGeneration = memberGeneration - 1
					return s
				}()), Current: true},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: previouslySet, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionTrue, "MinimumReplicasAvailable", allAvailable, t1, t1),
					progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "member-2: Outdated", t1)),
			},
		},
		{
			name: "a missing member keeps observedGeneration; counts come from the others",
			members: []Member{
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-3", Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, rolledOut(3)), Current: true},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: previouslySet, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 5, AvailableReplicas: 5,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionFalse, "MinimumReplicasUnavailable", "member-3: Missing", t1, t1),
					progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "member-3: Missing", t1)),
			},
		},
		{
			name: "unavailable members are listed",
			members: []Member{
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, unavailable(3, 1)), Current: true},
				{Cluster: "member-3", Object: deploymentCopy(t, appsv1.DeploymentStatus{ObservedGeneration: memberGeneration}), Current: true},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: templateGen, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 3, AvailableReplicas: 3,
				UnavailableReplicas: 2,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionFalse, "MinimumReplicasUnavailable",
						"member-2: MinimumReplicasUnavailable, member-3: NotReported", t1, t1),
					progressing(corev1.ConditionTrue, "ReplicaSetUpdated",
						"member-2: ReplicaSetUpdated, member-3: NotReported", t1)),
			},
		},
		{
			name: "a progress deadline exceeded in a member fails Progressing",
			members: []Member{
				{Cluster: "member-1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
				{Cluster: "member-2", Object: deploymentCopy(t, func() appsv1.DeploymentStatus {
					s := unavailable(2, 0)
					s.Conditions[1].Status, s.Conditions[1].Reason = corev1.ConditionFalse, "ProgressDeadlineExceeded"
					return s
				}()), Current: true},
			},
			want: appsv1.DeploymentStatus{
				ObservedGeneration: templateGen, Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 2, AvailableReplicas: 2,
				UnavailableReplicas: 2,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionFalse, "MinimumReplicasUnavailable", "member-2: MinimumReplicasUnavailable", t1, t1),
					progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded", "member-2: ProgressDeadlineExceeded", t1)),
			},
		},
		{
			name:    "no members: not Available (no pod runs), nothing else to wait for",
			members: nil,
			want: appsv1.DeploymentStatus{
				ObservedGeneration: templateGen,
				Conditions: conditions(
					deploymentCondition(corev1.ConditionFalse, "NoPlacement", "No cluster is placed to run the Deployment's replicas (see the FederatedObject's Scheduled condition).", t1, t1),
					progressing(corev1.ConditionTrue, "NewReplicaSetAvailable", allRolledOut, t1)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := deploymentTemplate(t, templateGen, previous)
			status, changed := AggregateStatus(template, tt.members, t1)
			if !changed {
				t.Errorf("changed = false, want true")
			}
			got := decodeInto[appsv1.DeploymentStatus](t, status)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
			// Written and read back, the same situation gives no write.
			again, changed := AggregateStatus(withStatus(t, template, status), tt.members, t2)
			if changed {
				t.Errorf("second aggregation: changed = true, want false")
			}
			if diff := cmp.Diff(status, again); diff != "" {
				t.Errorf("second aggregation differs (-first +second):\n%s", diff)
			}
		})
	}
}

// TestAggregateDeploymentRolloutStatus checks what `kubectl rollout
// status` reads once every member rolled out: observedGeneration ==
// generation and updated == replicas == available == the summed
// spec.replicas.
func TestAggregateDeploymentRolloutStatus(t *testing.T) {
	template := deploymentTemplate(t, 9, appsv1.DeploymentStatus{})
	members := []Member{
		{Cluster: "a", Object: deploymentCopy(t, rolledOut(1)), Current: true},
		{Cluster: "b", Object: deploymentCopy(t, rolledOut(4)), Current: true},
	}
	status, _ := AggregateStatus(template, members, t1)
	for field, want := range map[string]int64{"observedGeneration": 9, "replicas": 5, "updatedReplicas": 5, "availableReplicas": 5, "readyReplicas": 5} {
		got, ok := status[field].(int64)
		if !ok || got != want {
			t.Errorf("status.%s = %#v, want int64 %d", field, status[field], want)
		}
	}
	for _, field := range []string{"unavailableReplicas", "terminatingReplicas", "collisionCount"} {
		if v, has := status[field]; has {
			t.Errorf("status.%s = %#v, want it omitted", field, v)
		}
	}
}

func TestAggregateDeploymentKeepsCollisionCountAndSumsTerminating(t *testing.T) {
	collisions, two, one := int32(2), int32(2), int32(1)
	template := deploymentTemplate(t, templateGen, appsv1.DeploymentStatus{CollisionCount: &collisions})
	a, b := rolledOut(1), rolledOut(1)
	a.TerminatingReplicas, b.TerminatingReplicas = &two, &one
	status, _ := AggregateStatus(template, []Member{
		{Cluster: "a", Object: deploymentCopy(t, a), Current: true},
		{Cluster: "b", Object: deploymentCopy(t, b), Current: true},
		{Cluster: "c", Object: deploymentCopy(t, rolledOut(1)), Current: true},
	}, t1)
	got := decodeInto[appsv1.DeploymentStatus](t, status)
	if got.CollisionCount == nil || *got.CollisionCount != 2 {
		t.Errorf("collisionCount = %v, want 2", got.CollisionCount)
	}
	if got.TerminatingReplicas == nil || *got.TerminatingReplicas != 3 {
		t.Errorf("terminatingReplicas = %v, want 3", got.TerminatingReplicas)
	}
}

// TestAggregateDeploymentTimestamps follows the Available condition
// through a change: a status change stamps both times; a message change
// keeps lastTransitionTime and stamps lastUpdateTime; no change keeps
// both.
func TestAggregateDeploymentTimestamps(t *testing.T) {
	template := deploymentTemplate(t, templateGen, appsv1.DeploymentStatus{})
	healthy := []Member{
		{Cluster: "m1", Object: deploymentCopy(t, rolledOut(2)), Current: true},
		{Cluster: "m2", Object: deploymentCopy(t, rolledOut(2)), Current: true},
	}
	first, _ := AggregateStatus(template, healthy, t1)
	template = withStatus(t, template, first)

	oneDown := []Member{healthy[0], {Cluster: "m2", Object: deploymentCopy(t, unavailable(2, 1)), Current: true}}
	second, changed := AggregateStatus(template, oneDown, t2)
	if !changed {
		t.Fatalf("member becoming unavailable: changed = false, want true")
	}
	template = withStatus(t, template, second)

	bothDown := []Member{{Cluster: "m1", Object: deploymentCopy(t, unavailable(2, 0)), Current: true}, oneDown[1]}
	third, changed := AggregateStatus(template, bothDown, t3)
	if !changed {
		t.Fatalf("second member unavailable: changed = false, want true")
	}

	wantSecond := conditions(
		deploymentCondition(corev1.ConditionFalse, "MinimumReplicasUnavailable", "m2: MinimumReplicasUnavailable", t2, t2),
		progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "m2: ReplicaSetUpdated", t2))
	// Progressing stays True: its transition time is kept.
	wantSecond[1].LastTransitionTime = t1
	if diff := cmp.Diff(wantSecond, decodeInto[appsv1.DeploymentStatus](t, second).Conditions); diff != "" {
		t.Errorf("after one member went down (-want +got):\n%s", diff)
	}
	wantThird := conditions(
		deploymentCondition(corev1.ConditionFalse, "MinimumReplicasUnavailable",
			"m1: MinimumReplicasUnavailable, m2: MinimumReplicasUnavailable", t2, t3),
		progressing(corev1.ConditionTrue, "ReplicaSetUpdated", "m1: ReplicaSetUpdated, m2: ReplicaSetUpdated", t3))
	wantThird[1].LastTransitionTime = t1
	if diff := cmp.Diff(wantThird, decodeInto[appsv1.DeploymentStatus](t, third).Conditions); diff != "" {
		t.Errorf("after both members went down (-want +got):\n%s", diff)
	}

	if _, changed := AggregateStatus(withStatus(t, template, third), bothDown, t3); changed {
		t.Errorf("unchanged situation: changed = true, want false")
	}
}

func TestAggregateStatusKindsWithoutMeaning(t *testing.T) {
	for _, manifest := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nstatus: {ready: true}\n",
	} {
		obj := fromYAML(t, manifest)
		status, changed := AggregateStatus(obj, []Member{{Cluster: "m1", Object: obj, Current: true}}, t1)
		if status != nil || changed {
			t.Errorf("%s: AggregateStatus = (%v, %v), want (nil, false)", obj.GetKind(), status, changed)
		}
	}
	if status, changed := AggregateStatus(nil, nil, t1); status != nil || changed {
		t.Errorf("nil template: AggregateStatus = (%v, %v), want (nil, false)", status, changed)
	}
}

// TestSameJSON: a status a rule sums as float64 (1.0) is the one the
// apiserver hands back as int64 1: no write.
func TestSameJSON(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]any
		want bool
	}{
		{"float and int", map[string]any{"weight": float64(1)}, map[string]any{"weight": int64(1)}, true},
		{"fraction", map[string]any{"weight": 1.5}, map[string]any{"weight": int64(1)}, false},
		{"nested", map[string]any{"s": map[string]any{"n": float64(2)}}, map[string]any{"s": map[string]any{"n": int64(2)}}, true},
		{"missing field", map[string]any{"n": int64(2)}, map[string]any{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameJSON(tc.a, tc.b); got != tc.want {
				t.Errorf("sameJSON(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
