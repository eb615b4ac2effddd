package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Deployment condition reasons, as the Deployment controller sets them.
const (
	reasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	reasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	reasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	reasonReplicaSetUpdated          = "ReplicaSetUpdated"
	reasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
)

// deploymentStatus sums the members' replica counts (the built-in
// definition); the host's conditions say whether every member is available
// and rolled out (Go: deploymentConditions).
func deploymentStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any) {
	prev, old := templateStatus[appsv1.DeploymentStatus](template)
	ms := decodeMembers[appsv1.DeploymentStatus](members)
	sum := fromDefinition[appsv1.DeploymentStatus](template, members, now, old.ObservedGeneration)
	sum.CollisionCount = old.CollisionCount
	for _, m := range ms {
		sum.TerminatingReplicas = addCount(sum.TerminatingReplicas, m.status.TerminatingReplicas)
	}
	sum.Conditions = deploymentConditions(ms, old.Conditions, now)
	if replicas, found, _ := unstructured.NestedInt64(template.Object, "spec", "replicas"); len(ms) == 0 && (!found || replicas > 0) {
		// No cluster is placed (a policy that excludes them all): every
		// member's copy is available only vacuously, and `kubectl wait
		// --for=condition=Available` must not pass with no pod running.
		sum.Conditions[0] = stampDeploymentCondition(appsv1.DeploymentAvailable, verdict{Status: string(corev1.ConditionFalse),
			Reason: reasonNoPlacement, Message: "No cluster is placed to run the Deployment's replicas (see the FederatedObject's Scheduled condition)."},
			old.Conditions, now)
	}
	return prev, &sum
}

// deploymentObserved returns a Deployment status's observedGeneration.
func deploymentObserved(s appsv1.DeploymentStatus) int64 { return s.ObservedGeneration }

// deploymentConditions returns the host's Available and Progressing
// conditions. Available is True when every member's copy is available.
// Progressing is False (ProgressDeadlineExceeded) when any member's
// rollout exceeded its deadline, True with NewReplicaSetAvailable when
// every member completed the rollout of the current generation, else True
// with ReplicaSetUpdated. Messages list the members that hold the
// condition back.
func deploymentConditions(members []memberStatus[appsv1.DeploymentStatus], old []appsv1.DeploymentCondition, now metav1.Time) []appsv1.DeploymentCondition {
	var unavailable, exceeded, rolling clusterReasons
	for _, m := range members {
		if !m.valid {
			reason := reasonNotReported
			if m.Object == nil {
				reason = reasonMissing
			}
			unavailable.add(m.Cluster, reason)
			rolling.add(m.Cluster, reason)
			continue
		}
		if c := findDeploymentCondition(m.status.Conditions, appsv1.DeploymentAvailable); c == nil {
			unavailable.add(m.Cluster, reasonNotReported)
		} else if c.Status != corev1.ConditionTrue {
			unavailable.add(m.Cluster, reasonOf(string(c.Status), c.Reason))
		}
		c := findDeploymentCondition(m.status.Conditions, appsv1.DeploymentProgressing)
		switch {
		case c != nil && c.Status == corev1.ConditionFalse && c.Reason == reasonProgressDeadlineExceeded:
			exceeded.add(m.Cluster, c.Reason)
		case !m.upToDate(m.status.ObservedGeneration):
			rolling.add(m.Cluster, reasonOutdated)
		case c == nil:
			rolling.add(m.Cluster, reasonNotReported)
		case c.Status != corev1.ConditionTrue || c.Reason != reasonNewReplicaSetAvailable:
			rolling.add(m.Cluster, reasonOf(string(c.Status), c.Reason))
		}
	}

	available := verdict{Status: string(corev1.ConditionTrue), Reason: reasonMinimumReplicasAvailable,
		Message: "Deployment has minimum availability in every cluster."}
	if len(unavailable) > 0 {
		available = verdict{Status: string(corev1.ConditionFalse), Reason: reasonMinimumReplicasUnavailable,
			Message: unavailable.String()}
	}
	progressing := verdict{Status: string(corev1.ConditionTrue), Reason: reasonNewReplicaSetAvailable,
		Message: "Deployment has been rolled out in every cluster."}
	switch {
	case len(exceeded) > 0:
		progressing = verdict{Status: string(corev1.ConditionFalse), Reason: reasonProgressDeadlineExceeded,
			Message: exceeded.String()}
	case len(rolling) > 0:
		progressing = verdict{Status: string(corev1.ConditionTrue), Reason: reasonReplicaSetUpdated,
			Message: rolling.String()}
	}
	return []appsv1.DeploymentCondition{
		stampDeploymentCondition(appsv1.DeploymentAvailable, available, old, now),
		stampDeploymentCondition(appsv1.DeploymentProgressing, progressing, old, now),
	}
}

// findDeploymentCondition returns the condition of type t, or nil.
func findDeploymentCondition(conds []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// stampDeploymentCondition builds a condition of type t from v, with the
// timestamps of the template's condition old when v did not change it.
func stampDeploymentCondition(t appsv1.DeploymentConditionType, v verdict, old []appsv1.DeploymentCondition, now metav1.Time) appsv1.DeploymentCondition {
	var prev *previous
	if c := findDeploymentCondition(old, t); c != nil {
		prev = &previous{
			verdict:    verdict{Status: string(c.Status), Reason: c.Reason, Message: c.Message},
			transition: c.LastTransitionTime,
			update:     c.LastUpdateTime,
		}
	}
	transition, update := stamp(prev, v, now)
	return appsv1.DeploymentCondition{
		Type:               t,
		Status:             corev1.ConditionStatus(v.Status),
		Reason:             v.Reason,
		Message:            v.Message,
		LastTransitionTime: transition,
		LastUpdateTime:     update,
	}
}

// statefulSetStatus sums the members' replica counts; the revisions are
// those of the first member (in cluster-name order) still rolling out, so
// the host shows a rollout until every member finished it; when none is,
// both are the first member's current revision (the built-in definition).
func statefulSetStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any) {
	prev, old := templateStatus[appsv1.StatefulSetStatus](template)
	sum := fromDefinition[appsv1.StatefulSetStatus](template, members, now, old.ObservedGeneration)
	sum.CollisionCount = old.CollisionCount
	return prev, &sum
}

// daemonSetStatus sums the members' scheduling counts (the built-in
// definition).
func daemonSetStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any) {
	prev, old := templateStatus[appsv1.DaemonSetStatus](template)
	sum := fromDefinition[appsv1.DaemonSetStatus](template, members, now, old.ObservedGeneration)
	sum.CollisionCount = old.CollisionCount
	return prev, &sum
}

// replicaSetStatus sums the members' replica counts (the built-in
// definition; the optional terminating count in Go).
func replicaSetStatus(template *unstructured.Unstructured, members []Member, now metav1.Time) (prev, next any) {
	prev, old := templateStatus[appsv1.ReplicaSetStatus](template)
	sum := fromDefinition[appsv1.ReplicaSetStatus](template, members, now, old.ObservedGeneration)
	for _, m := range decodeMembers[appsv1.ReplicaSetStatus](members) {
		sum.TerminatingReplicas = addCount(sum.TerminatingReplicas, m.status.TerminatingReplicas)
	}
	return prev, &sum
}
