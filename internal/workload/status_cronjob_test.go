package workload

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAggregateCronJob(t *testing.T) {
	at := func(min int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 11, 25, 12, min, 0, 0, time.UTC)}
	}
	cron := func(status batchv1.CronJobStatus) *unstructured.Unstructured {
		return toUnstructured(t, &batchv1.CronJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
			ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: "shop", Generation: 1},
			Status:     status,
		})
	}
	job := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: "shop", Name: name}
	}
	template := cron(batchv1.CronJobStatus{})
	// Divided: one member runs it.
	status, changed := AggregateStatus(template, []Member{
		{Cluster: "a", Object: cron(batchv1.CronJobStatus{LastScheduleTime: at(3), LastSuccessfulTime: at(2), Active: []corev1.ObjectReference{job("report-3")}}), Current: true},
		{Cluster: "b"},
	}, metav1.Now())
	if !changed {
		t.Fatal("no change reported")
	}
	if got, _, _ := unstructured.NestedString(status, "lastScheduleTime"); got != "2026-11-25T12:03:00Z" {
		t.Errorf("lastScheduleTime = %q", got)
	}
	if got, _, _ := unstructured.NestedString(status, "lastSuccessfulTime"); got != "2026-11-25T12:02:00Z" {
		t.Errorf("lastSuccessfulTime = %q", got)
	}
	if got, _, _ := unstructured.NestedSlice(status, "active"); len(got) != 1 {
		t.Errorf("active = %v", got)
	}
	// Duplicated: the latest of every member.
	status, _ = AggregateStatus(template, []Member{
		{Cluster: "a", Object: cron(batchv1.CronJobStatus{LastScheduleTime: at(3)}), Current: true},
		{Cluster: "b", Object: cron(batchv1.CronJobStatus{LastScheduleTime: at(4), Active: []corev1.ObjectReference{job("report-4")}}), Current: true},
	}, metav1.Now())
	if got, _, _ := unstructured.NestedString(status, "lastScheduleTime"); got != "2026-11-25T12:04:00Z" {
		t.Errorf("duplicated lastScheduleTime = %q", got)
	}
}
