package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Names the harness uses.
const (
	benchNamespace   = "flotilla-bench"
	ceilingNamespace = "flotilla-bench-ceiling"
	policyName       = "flotilla-bench"
	imageV1          = "registry.example.com/bench:1.0"
	imageV2          = "registry.example.com/bench:2.0"
	// appLabel holds the workload's name on its Deployment and pods.
	appLabel = "app"
)

// workloadName is the name of the i-th workload's Deployment.
func workloadName(i int) string { return fmt.Sprintf("wl-%05d", i) }

// configMapName is the name of the ConfigMap a workload mounts.
func configMapName(i int) string { return workloadName(i) + "-config" }

// deployment builds the i-th workload: a Deployment that mounts its
// ConfigMap, so that the ConfigMap follows it to its members.
func deployment(ns string, i int, replicas int32) *appsv1.Deployment {
	name := workloadName(i)
	labels := map[string]string{appLabel: name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "app", Image: imageV1,
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMapName(i)}},
					}}},
				},
			},
		},
	}
}

// configMap builds the i-th workload's ConfigMap.
func configMap(ns string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configMapName(i)},
		Data:       map[string]string{"greeting": "hello", "index": fmt.Sprint(i)},
	}
}

// policy selects the Deployments of ns, and nothing else, and divides
// their replicas over every member with equal weights. The ConfigMaps
// come along as followers.
func policy(ns string) *v1alpha1.ClusterPropagationPolicy {
	return &v1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}},
			Placement: v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{
				Type: v1alpha1.ReplicaSchedulingDivide,
			}},
		},
	}
}

// namespace builds a namespace.
func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// forEach calls fn for 0..n-1 from workers goroutines and returns the
// first error (which cancels the calls not yet started).
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// timed calls fn for 0..n-1 like forEach and returns, per index, when its
// call returned.
func timed(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) ([]time.Time, error) {
	done := make([]time.Time, n)
	err := forEach(ctx, n, workers, func(ctx context.Context, i int) error {
		if err := fn(ctx, i); err != nil {
			return err
		}
		done[i] = time.Now()
		return nil
	})
	return done, err
}
