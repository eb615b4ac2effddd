// Package rolloutctl drives a federated rollout from outside, as `flotilla
// rollout approve|resume|abort` do: it reads where the rollout stands in
// the FederatedObject and records the user's decision on the host
// Deployment (annotations the rollout controller reads, or the previous
// revision's template for abort), so that a user needs only their rights
// on the Deployment. Each is also a kubectl patch (docs/rollouts.md).
package rolloutctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Deployment is one host Deployment's federated rollout.
type Deployment struct {
	// Client reads and writes the host.
	Client client.Client
	// Key names the Deployment.
	Key types.NamespacedName
}

// plan returns the recorded rollout plan, or an error saying why there is
// none.
func (d Deployment) plan(ctx context.Context) (*v1alpha1.RolloutStatus, error) {
	fo := &v1alpha1.FederatedObject{}
	if err := d.Client.Get(ctx, types.NamespacedName{Namespace: d.Key.Namespace, Name: d.Key.Name + ".deployment.apps"}, fo); err != nil {
		return nil, fmt.Errorf("deployment %s is not propagated: %w", d.Key, err)
	}
	if fo.Status.Rollout == nil {
		return nil, fmt.Errorf("deployment %s has no federated rollout (it is not divided over clusters, or rolls per member)", d.Key)
	}
	return fo.Status.Rollout, nil
}

// Approve opens the Approval gate after stage (empty: the gate the
// rollout waits at) for the current revision, and returns what it did.
func (d Deployment) Approve(ctx context.Context, stage string) (string, error) {
	plan, err := d.plan(ctx)
	if err != nil {
		return "", err
	}
	if stage == "" {
		if plan.Gate != v1alpha1.GateApproval {
			return "", fmt.Errorf("the rollout of %s waits for no approval (stage %q, gate %q, halted %q); name a stage with --stage to approve one ahead", d.Key, plan.Stage, plan.Gate, plan.Halted)
		}
		stage = plan.Stage
	}
	if err := d.annotate(ctx, v1alpha1.AnnotationRolloutApproved, plan.Revision+"/"+stage); err != nil {
		return "", err
	}
	return fmt.Sprintf("deployment/%s: revision %s approved after stage %s", d.Key.Name, plan.Revision, stage), nil
}

// Resume lets the current revision go on past a halt of the stage it is
// at, or through that stage's Pause gate early. Later stages still halt
// and pause.
func (d Deployment) Resume(ctx context.Context) (string, error) {
	plan, err := d.plan(ctx)
	if err != nil {
		return "", err
	}
	if plan.Stage == "" || (plan.Halted == "" && plan.Gate != v1alpha1.GatePause) {
		return "", fmt.Errorf("the rollout of %s is neither halted nor at a Pause gate (stage %q, gate %q)", d.Key, plan.Stage, plan.Gate)
	}
	if err := d.annotate(ctx, v1alpha1.AnnotationRolloutResumed, plan.Revision+"/"+plan.Stage); err != nil {
		return "", err
	}
	return fmt.Sprintf("deployment/%s: revision %s resumed at stage %s", d.Key.Name, plan.Revision, plan.Stage), nil
}

// annotate sets one annotation on the host Deployment.
func (d Deployment) annotate(ctx context.Context, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.Key.Namespace, Name: d.Key.Name}}
	if err := d.Client.Patch(ctx, dep, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate deployment %s: %w", d.Key, err)
	}
	return nil
}

// ErrNoPrevious says a Deployment has no earlier revision to go back to.
var ErrNoPrevious = errors.New("no earlier revision recorded")

// Abort rolls the Deployment back to its previous revision (as kubectl
// rollout undo does): the revision's pod template, kept by the host's
// revision history, replaces the current one, and rolls out under the
// same budget and stages. A paused Deployment is refused, as kubectl
// does.
func (d Deployment) Abort(ctx context.Context) (string, error) {
	dep := &appsv1.Deployment{}
	if err := d.Client.Get(ctx, d.Key, dep); err != nil {
		return "", fmt.Errorf("deployment %s: %w", d.Key, err)
	}
	if dep.Spec.Paused {
		return "", fmt.Errorf("deployment %s is paused: resume it first (kubectl rollout resume)", d.Key)
	}
	list := &appsv1.ReplicaSetList{}
	if err := d.Client.List(ctx, list, client.InNamespace(d.Key.Namespace)); err != nil {
		return "", err
	}
	var history []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, dep) {
			history = append(history, rs)
		}
	}
	slices.SortFunc(history, func(a, b appsv1.ReplicaSet) int { return int(revision(b) - revision(a)) })
	// The newest revision whose template is not the current one.
	i := slices.IndexFunc(history, func(rs appsv1.ReplicaSet) bool {
		t := rs.Spec.Template.DeepCopy()
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		return !equality.Semantic.DeepEqual(*t, dep.Spec.Template)
	})
	if i < 0 {
		return "", fmt.Errorf("deployment %s: %w", d.Key, ErrNoPrevious)
	}
	prev := history[i]
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}})
	if err != nil {
		return "", err
	}
	if err := d.Client.Patch(ctx, dep, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return "", fmt.Errorf("roll back deployment %s: %w", d.Key, err)
	}
	return fmt.Sprintf("deployment/%s: rolled back to revision %d", d.Key.Name, revision(prev)), nil
}

func revision(rs appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
	return n
}
