package workload

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func jobObject(t *testing.T, status batchv1.JobStatus) *unstructured.Unstructured {
	return toUnstructured(t, &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "shop", Generation: 1},
		Status:     status,
	})
}

func at(minute int) *metav1.Time {
	t := metav1.NewTime(time.Date(2026, 3, 1, 9, minute, 0, 0, time.UTC))
	return &t
}

func running(active, succeeded int32, start *metav1.Time) batchv1.JobStatus {
	ready := active
	return batchv1.JobStatus{Active: active, Ready: &ready, Succeeded: succeeded, StartTime: start}
}

func completed(succeeded int32, start, end *metav1.Time) batchv1.JobStatus {
	zero := int32(0)
	return batchv1.JobStatus{Succeeded: succeeded, Ready: &zero, StartTime: start, CompletionTime: end,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached"},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached"},
		}}
}

func failed(failures int32, start *metav1.Time) batchv1.JobStatus {
	zero := int32(0)
	return batchv1.JobStatus{Failed: failures, Ready: &zero, StartTime: start,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"},
		}}
}

func jobCondition(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: t1, LastTransitionTime: t1}
}

func ptrTo(n int32) *int32 { return &n }

func TestAggregateJob(t *testing.T) {
	done := "Job completed in every cluster (succeeded: a 2, b 1)."
	tests := []struct {
		name     string
		template batchv1.JobStatus
		members  map[string]batchv1.JobStatus
		missing  []string
		want     batchv1.JobStatus
	}{
		{
			name: "running: sums and the earliest start",
			members: map[string]batchv1.JobStatus{
				"a": running(2, 1, at(5)),
				"b": running(1, 0, at(3)),
			},
			want: batchv1.JobStatus{Active: 3, Ready: ptrTo(3), Succeeded: 1, StartTime: at(3)},
		},
		{
			name: "one member complete, one running: not complete",
			members: map[string]batchv1.JobStatus{
				"a": completed(2, at(1), at(9)),
				"b": running(1, 1, at(2)),
			},
			want: batchv1.JobStatus{Active: 1, Ready: ptrTo(1), Succeeded: 3, StartTime: at(1)},
		},
		{
			name: "every member complete: complete at the latest completion",
			members: map[string]batchv1.JobStatus{
				"a": completed(2, at(1), at(9)),
				"b": completed(1, at(2), at(14)),
			},
			want: batchv1.JobStatus{Ready: ptrTo(0), Succeeded: 3, StartTime: at(1), CompletionTime: at(14),
				Conditions: []batchv1.JobCondition{
					jobCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", done),
					jobCondition(batchv1.JobComplete, "CompletionsReached", done),
				}},
		},
		{
			name: "a member failed while another runs: FailureTarget only",
			members: map[string]batchv1.JobStatus{
				"a": failed(6, at(1)),
				"b": running(1, 0, at(2)),
			},
			want: batchv1.JobStatus{Active: 1, Ready: ptrTo(1), Failed: 6, StartTime: at(1),
				Conditions: []batchv1.JobCondition{
					jobCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "a: BackoffLimitExceeded"),
				}},
		},
		{
			name: "a member failed and the others finished: Failed",
			members: map[string]batchv1.JobStatus{
				"a": completed(1, at(1), at(4)),
				"b": failed(6, at(2)),
				"c": failed(6, at(3)),
			},
			want: batchv1.JobStatus{Ready: ptrTo(0), Succeeded: 1, Failed: 12, StartTime: at(1),
				Conditions: []batchv1.JobCondition{
					jobCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "b: BackoffLimitExceeded, c: BackoffLimitExceeded"),
					jobCondition(batchv1.JobFailed, "BackoffLimitExceeded", "b: BackoffLimitExceeded, c: BackoffLimitExceeded"),
				}},
		},
		{
			name: "a member failed and another's copy is not known: FailureTarget only (it may run pods)",
			members: map[string]batchv1.JobStatus{
				"a": failed(6, at(1)),
			},
			missing: []string{"b"},
			want: batchv1.JobStatus{Ready: ptrTo(0), Failed: 6, StartTime: at(1),
				Conditions: []batchv1.JobCondition{
					jobCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "a: BackoffLimitExceeded"),
				}},
		},
		{
			name:     "a missing member: not complete, counters and start time do not go back",
			template: batchv1.JobStatus{Succeeded: 4, Failed: 1, StartTime: at(0)},
			members: map[string]batchv1.JobStatus{
				"a": completed(2, at(1), at(9)),
			},
			missing: []string{"b"},
			want:    batchv1.JobStatus{Ready: ptrTo(0), Succeeded: 4, Failed: 1, StartTime: at(0)},
		},
		{
			name:    "no members: never complete",
			members: nil,
			want:    batchv1.JobStatus{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var members []Member
			for cluster, s := range tt.members {
				members = append(members, Member{Cluster: cluster, Object: jobObject(t, s), Current: true})
			}
			for _, cluster := range tt.missing {
				members = append(members, Member{Cluster: cluster})
			}
			template := jobObject(t, tt.template)
			status, _ := AggregateStatus(template, members, t1)
			if diff := cmp.Diff(tt.want, decodeInto[batchv1.JobStatus](t, status)); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
			if _, changed := AggregateStatus(withStatus(t, template, status), members, t2); changed {
				t.Errorf("second aggregation: changed = true, want false")
			}
		})
	}
}

// TestAggregateJobFinishedIsFinal: terminal conditions and completionTime
// cannot change once written, so a finished host Job keeps its status.
func TestAggregateJobFinishedIsFinal(t *testing.T) {
	final := completed(3, at(1), at(14))
	template := jobObject(t, final)
	status, changed := AggregateStatus(template, []Member{{Cluster: "a", Object: jobObject(t, running(1, 0, at(20))), Current: true}}, t1)
	if changed {
		t.Errorf("changed = true, want false")
	}
	if diff := cmp.Diff(final, decodeInto[batchv1.JobStatus](t, status)); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

func serviceObject(t *testing.T, ingress ...corev1.LoadBalancerIngress) *unstructured.Unstructured {
	return toUnstructured(t, &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "shop"},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
	})
}

func TestAggregateService(t *testing.T) {
	ip := func(addr string) corev1.LoadBalancerIngress { return corev1.LoadBalancerIngress{IP: addr} }
	host := func(name string) corev1.LoadBalancerIngress { return corev1.LoadBalancerIngress{Hostname: name} }
	members := []Member{
		{Cluster: "c", Object: serviceObject(t, ip("10.0.0.9"), host("lb.example.com")), Current: true},
		{Cluster: "a", Object: serviceObject(t, ip("10.0.0.2")), Current: true},
		{Cluster: "b", Object: serviceObject(t, ip("10.0.0.9"), host("alb.example.com")), Current: true},
		{Cluster: "d"},
	}
	status, changed := AggregateStatus(serviceObject(t), members, t1)
	if !changed {
		t.Errorf("changed = false, want true")
	}
	want := corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		host("alb.example.com"), host("lb.example.com"), ip("10.0.0.2"), ip("10.0.0.9"),
	}}}
	if diff := cmp.Diff(want, decodeInto[corev1.ServiceStatus](t, status)); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
	if _, changed := AggregateStatus(withStatus(t, serviceObject(t), status), members, t2); changed {
		t.Errorf("second aggregation: changed = true, want false")
	}
}

func TestAggregateServiceWithoutLoadBalancer(t *testing.T) {
	// A ClusterIP Service reads back as status: {loadBalancer: {}}.
	template := fromYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nstatus: {loadBalancer: {}}\n")
	members := []Member{{Cluster: "a", Object: serviceObject(t), Current: true}}
	status, changed := AggregateStatus(template, members, t1)
	if changed {
		t.Errorf("changed = true, want false")
	}
	if diff := cmp.Diff(map[string]any{"loadBalancer": map[string]any{}}, status); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

func TestAggregateJobCompletions(t *testing.T) {
	withCompletions := func(n int32, s batchv1.JobStatus) *unstructured.Unstructured {
		return toUnstructured(t, &batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: metav1.ObjectMeta{Name: "crunch", Namespace: "shop", Generation: 1},
			Spec:       batchv1.JobSpec{Completions: &n},
			Status:     s,
		})
	}
	complete := func(status map[string]any) bool {
		s := decodeInto[batchv1.JobStatus](t, status)
		return jobConditionTrue(s.Conditions, batchv1.JobComplete)
	}
	// Duplicate: three members each ran the 6 completions.
	var dup []Member
	for _, c := range []string{"a", "b", "c"} {
		dup = append(dup, Member{Cluster: c, Object: withCompletions(6, completed(6, at(1), at(5))), Current: true})
	}
	status, _ := AggregateStatus(withCompletions(6, batchv1.JobStatus{}), dup, t1)
	if s := decodeInto[batchv1.JobStatus](t, status); s.Succeeded != 6 || !complete(status) {
		t.Errorf("duplicated: succeeded %d complete %v, want 6 and Complete", s.Succeeded, complete(status))
	}
	if s := decodeInto[batchv1.JobStatus](t, status); len(s.Conditions) < 2 || !strings.Contains(s.Conditions[1].Message, "a 6, b 6, c 6") {
		t.Errorf("conditions %+v, want what each cluster ran", s.Conditions)
	}
	// Divided 2/2/2: complete once every share is.
	var div []Member
	for _, c := range []string{"a", "b", "c"} {
		div = append(div, Member{Cluster: c, Object: withCompletions(2, completed(2, at(1), at(5))), Current: true})
	}
	status, _ = AggregateStatus(withCompletions(6, batchv1.JobStatus{}), div, t1)
	if s := decodeInto[batchv1.JobStatus](t, status); s.Succeeded != 6 || !complete(status) {
		t.Errorf("divided: succeeded %d complete %v, want 6 and Complete", s.Succeeded, complete(status))
	}
	// A member whose share is gone: 4 of 6, not complete.
	status, _ = AggregateStatus(withCompletions(6, batchv1.JobStatus{}), div[:2], t1)
	if s := decodeInto[batchv1.JobStatus](t, status); s.Succeeded != 4 || complete(status) {
		t.Errorf("a share lost: succeeded %d complete %v, want 4 and not Complete", s.Succeeded, complete(status))
	}
}

func TestAddInt32Saturates(t *testing.T) {
	for _, tt := range []struct{ a, b, want int32 }{
		{1, 2, 3},
		{math.MaxInt32, 1, math.MaxInt32},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32},
		{math.MinInt32, -1, math.MinInt32},
		{-5, 3, -2},
	} {
		if got := addInt32(tt.a, tt.b); got != tt.want {
			t.Errorf("addInt32(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
