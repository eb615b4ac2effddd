package federate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestJobCopyKeepsItsPodTemplate: a started Job's pod template cannot
// change in the member, so an override added after its copy started leaves
// the copy's template as it is (and the copy OK) instead of failing every
// pass with "field is immutable".
func TestJobCopyKeepsItsPodTemplate(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	jobs := []v1alpha1.ResourceSelector{{APIVersion: "batch/v1", Kind: "Job", Namespace: ns}}
	pp := &v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jobs"},
		Spec: v1alpha1.PropagationSpec{ResourceSelectors: jobs, Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}}}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report"}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "report", Image: "example.com/report:1.0"}}}},
	}}
	if err := admin.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	foKey := types.NamespacedName{Namespace: ns, Name: "report.job.batch"}
	waitForCluster(t, foKey, v1alpha1.PropagationOK)
	members := env.Cluster(memberName).Client.BatchV1().Jobs(ns)
	copyOf := func(ctx context.Context) (*batchv1.Job, error) {
		return members.Get(ctx, "report", metav1.GetOptions{})
	}
	var first *batchv1.Job
	testenv.Eventually(t, waitTimeout, "the member's Job started", func(ctx context.Context) error {
		var err error
		if first, err = copyOf(ctx); err != nil {
			return err
		}
		if first.Status.StartTime == nil {
			return fmt.Errorf("status %+v", first.Status)
		}
		return nil
	})

	op := &v1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tag"}, Spec: v1alpha1.OverrideSpec{
		ResourceSelectors: jobs,
		Rules:             []v1alpha1.OverrideRule{{Overriders: v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Tag: "2.0"}}}}},
	}}
	if err := admin.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	// The pass that renders the override writes the copy (its template
	// hash changes) and keeps the member's pod template.
	testenv.Eventually(t, waitTimeout, "the copy written for the override", func(ctx context.Context) error {
		got, err := copyOf(ctx)
		if err != nil {
			return err
		}
		if got.Labels[dispatch.LabelTemplateHash] == first.Labels[dispatch.LabelTemplateHash] {
			fo := &v1alpha1.FederatedObject{}
			_ = admin.Get(ctx, foKey, fo)
			return fmt.Errorf("template hash still %q; status.clusters %+v", first.Labels[dispatch.LabelTemplateHash], fo.Status.Clusters)
		}
		return nil
	})
	testenv.Consistently(t, 3*time.Second, func() error {
		got, err := copyOf(ctx)
		if err != nil {
			return err
		}
		if image := got.Spec.Template.Spec.Containers[0].Image; image != "example.com/report:1.0" {
			return fmt.Errorf("the copy's image is %s", image)
		}
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, foKey, fo); err != nil {
			return err
		}
		for _, c := range fo.Status.Clusters {
			if c.Cluster == memberName && c.Reason != v1alpha1.PropagationOK {
				return fmt.Errorf("%s: %s %s", c.Cluster, c.Reason, c.Message)
			}
		}
		return nil
	})
}
