package testenv

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DeploymentBuilder builds Deployments for tests:
// MakeDeployment("web", ns).Replicas(3).CPU("100m").Obj().
type DeploymentBuilder struct{ d *appsv1.Deployment }

// MakeDeployment starts a one-container nginx Deployment with one replica.
func MakeDeployment(name, namespace string) *DeploymentBuilder {
	labels := map[string]string{"app": name}
	replicas := int32(1)
	return &DeploymentBuilder{d: &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
			},
		},
	}}
}

// Replicas sets the replica count.
func (b *DeploymentBuilder) Replicas(n int32) *DeploymentBuilder {
	b.d.Spec.Replicas = &n
	return b
}

// CPU sets the container's cpu request.
func (b *DeploymentBuilder) CPU(q string) *DeploymentBuilder {
	b.d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	return b
}

// Obj returns the Deployment.
func (b *DeploymentBuilder) Obj() *appsv1.Deployment { return b.d.DeepCopy() }

// DeploymentReady returns nil once the Deployment's rollout is complete with
// every replica ready and available.
func DeploymentReady(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if d.Generation != s.ObservedGeneration || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want {
		return fmt.Errorf("deployment %s/%s: generation %d observed %d, replicas %d updated %d ready %d available %d",
			namespace, name, d.Generation, s.ObservedGeneration, want, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
	}
	return nil
}

// PodsUnschedulable returns nil once want pods match the selector and every
// one of them is Pending with PodScheduled=False, reason Unschedulable.
func PodsUnschedulable(ctx context.Context, c kubernetes.Interface, namespace, selector string, want int) error {
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	if len(pods.Items) != want {
		return fmt.Errorf("%d pods match %q, want %d", len(pods.Items), selector, want)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		cond := podCondition(&p, corev1.PodScheduled)
		if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
			return fmt.Errorf("pod %s PodScheduled condition is %+v", p.Name, cond)
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
