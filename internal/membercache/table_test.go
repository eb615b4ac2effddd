package membercache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodStatus(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"phase", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Running"},
		{"reason wins", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, "Evicted"},
		{"waiting container", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}, "ImagePullBackOff"},
		{"terminated by signal", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: 9}}}}}}, "Signal:9"},
		{"init running", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{}, {}}}, Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}, {State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}, "Init:1/2"},
		{"init failed", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{}}}, Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}}}, "Init:ExitCode:3"},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Terminating"},
		{"node lost", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"}}, "Unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodStatus(&tc.pod); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

func TestTablesHaveClusterColumn(t *testing.T) {
	for _, k := range kinds {
		cols := k.Columns()
		if len(cols) < 2 || cols[1].Name != "Cluster" {
			t.Errorf("%s: columns %v, want Cluster second", k.Kind, cols)
		}
		cells := k.Cells(k.NewObject(), "", metav1.Now().Time)
		if len(cells) != len(cols) {
			t.Errorf("%s: %d cells for %d columns", k.Kind, len(cells), len(cols))
		}
		if cells[1] != HostCluster {
			t.Errorf("%s: cluster cell %v for the host, want %s", k.Kind, cells[1], HostCluster)
		}
	}
}
