// Package rolloutctl drives a federated rollout from outside, as `flotilla
// rollout approve|resume|abort` do: it reads where the rollout stands in
// the FederatedObject and records the user's decision on the host
// workload (annotations the rollout controller reads, or, for a
// Deployment's abort, the previous revision's template), so that a user
// needs only their rights on the workload. Each is also a kubectl patch
// (docs/rollouts.md).
package rolloutctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Workload is one host workload's federated rollout: a Deployment, a
// StatefulSet, or an object of a custom kind whose WorkloadInterpreter has
// a rollout rule.
type Workload struct {
	// Client reads and writes the host.
	Client client.Client
	// Kind is the workload's group, version and kind.
	Kind schema.GroupVersionKind
	// Key names the workload.
	Key types.NamespacedName
}

// name is how messages name the workload, as kubectl does: deployment/web,
// statefulset/db, cloneset.apps.kruise.io/web.
func (w Workload) name() string {
	kind := strings.ToLower(w.Kind.Kind)
	if w.Kind.Group != "" && w.Kind.Group != appsv1.GroupName {
		kind += "." + w.Kind.Group
	}
	return kind + "/" + w.Key.Name
}

// describe is name with the namespace, for errors.
func (w Workload) describe() string {
	if w.Key.Namespace == "" {
		return w.name()
	}
	return w.name() + " in namespace " + w.Key.Namespace
}

// isDeployment reports whether w is an apps Deployment.
func (w Workload) isDeployment() bool {
	return w.Kind.GroupKind() == appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()
}

// plan returns the recorded rollout plan, or an error saying why there is
// none, and the FederatedObject's policy (nil when it has none).
func (w Workload) plan(ctx context.Context) (*v1alpha1.RolloutStatus, *v1alpha1.PolicyReference, error) {
	fo := &v1alpha1.FederatedObject{}
	key := templates.Key{Group: w.Kind.Group, Kind: w.Kind.Kind, Namespace: w.Key.Namespace, Name: w.Key.Name}.FederatedName()
	if err := w.Client.Get(ctx, key, fo); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("%s is not propagated (no FederatedObject %s)", w.describe(), key)
		}
		return nil, nil, fmt.Errorf("%s: read its FederatedObject %s: %w", w.describe(), key, err)
	}
	if ref := templates.KeyOfReference(fo.Spec.Template); ref.GroupKind() != w.Kind.GroupKind() || ref.Name != w.Key.Name {
		// Names are name.kind.group, which two odd names can share.
		return nil, nil, fmt.Errorf("%s is not propagated: FederatedObject %s belongs to %s %s", w.describe(), key, ref.GroupKind(), ref.Name)
	}
	if fo.Status.Rollout == nil {
		return nil, nil, fmt.Errorf("%s has no federated rollout (it is not divided over clusters, rolls per member, or its kind has no WorkloadInterpreter rollout rule)", w.describe())
	}
	return fo.Status.Rollout, fo.Spec.Policy, nil
}

// Approve opens the Approval gate after stage (empty: the gate the
// rollout waits at) for the current revision, and returns what it did.
// The annotation holds one stage: a stage the rollout does not have is
// refused, and so is one before a stage already approved ahead for the
// same revision (it would close that stage's gate again) when the policy
// can be read to tell their order.
func (w Workload) Approve(ctx context.Context, stage string) (string, error) {
	plan, ref, err := w.plan(ctx)
	if err != nil {
		return "", err
	}
	if stage == "" {
		if plan.Gate != v1alpha1.GateApproval {
			return "", fmt.Errorf("the rollout of %s waits for no approval (stage %q, gate %q, halted %q); name a stage with --stage to approve one ahead", w.name(), plan.Stage, plan.Gate, plan.Halted)
		}
		stage = plan.Stage
	}
	order := stageOrder(w.policyStages(ctx, ref), plan)
	known := stagesOf(plan, order)
	if !slices.Contains(known, stage) {
		return "", fmt.Errorf("the rollout of %s has no stage %q (its stages: %s)", w.name(), stage, strings.Join(known, ", "))
	}
	current, err := w.read(ctx)
	if err != nil {
		return "", err
	}
	note := ""
	if rev, prev, ok := strings.Cut(current.GetAnnotations()[v1alpha1.AnnotationRolloutApproved], "/"); ok && rev == plan.Revision && prev != stage {
		if i, j := slices.Index(order, prev), slices.Index(order, stage); j >= 0 && i > j {
			return "", fmt.Errorf("revision %s of %s is already approved through stage %s, which comes after %s: approving %s would close %s's gate again", plan.Revision, w.name(), prev, stage, stage, prev)
		}
		note = fmt.Sprintf(" (replacing the approval after stage %s)", prev)
	}
	if err := w.annotate(ctx, v1alpha1.AnnotationRolloutApproved, plan.Revision+"/"+stage); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: revision %s approved after stage %s%s", w.name(), plan.Revision, stage, note), nil
}

// policyStages returns the policy's stage names in order; nil when the
// policy cannot be read (a user without rights on it, or it is gone).
func (w Workload) policyStages(ctx context.Context, ref *v1alpha1.PolicyReference) []string {
	if ref == nil {
		return nil
	}
	spec, err := fedobj.PolicySpec(ctx, w.Client, *ref)
	if err != nil || spec == nil || spec.Rollout == nil || len(spec.Rollout.Stages) == 0 {
		return nil
	}
	out := make([]string, 0, len(spec.Rollout.Stages))
	for _, s := range spec.Rollout.Stages {
		out = append(out, s.Name)
	}
	return out
}

// stageOrder returns the rollout's stages in order when the policy's are
// known (nil otherwise): the policy's, then the stage of the clusters no
// stage takes (the rollout controller's last), if some placed cluster is
// in it.
func stageOrder(policy []string, plan *v1alpha1.RolloutStatus) []string {
	if policy == nil {
		return nil
	}
	out := slices.Clone(policy)
	for _, c := range plan.Clusters {
		if c.Stage != "" && !slices.Contains(out, c.Stage) {
			out = append(out, c.Stage)
		}
	}
	return out
}

// stagesOf lists the stages the rollout has: those of order (stageOrder),
// and those the FederatedObject reports (every placed cluster's, the one
// the rollout is at and the last it reached).
func stagesOf(plan *v1alpha1.RolloutStatus, order []string) []string {
	out := slices.Clone(order)
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, c := range plan.Clusters {
		add(c.Stage)
	}
	add(plan.Stage)
	add(plan.Reached)
	return out
}

// read returns the host workload.
func (w Workload) read(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(w.Kind)
	if err := w.Client.Get(ctx, w.Key, u); err != nil {
		return nil, fmt.Errorf("read %s: %w", w.describe(), err)
	}
	return u, nil
}

// Resume lets the current revision go on past a halt of the stage it is
// at, or through that stage's Pause gate early. Later stages still halt
// and pause.
func (w Workload) Resume(ctx context.Context) (string, error) {
	plan, _, err := w.plan(ctx)
	if err != nil {
		return "", err
	}
	if plan.Stage == "" || (plan.Halted == "" && plan.Gate != v1alpha1.GatePause) {
		return "", fmt.Errorf("the rollout of %s is neither halted nor at a Pause gate (stage %q, gate %q)", w.name(), plan.Stage, plan.Gate)
	}
	if err := w.annotate(ctx, v1alpha1.AnnotationRolloutResumed, plan.Revision+"/"+plan.Stage); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: revision %s resumed at stage %s", w.name(), plan.Revision, plan.Stage), nil
}

// annotate sets one annotation on the host workload.
func (w Workload) annotate(ctx context.Context, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(w.Kind)
	obj.SetNamespace(w.Key.Namespace)
	obj.SetName(w.Key.Name)
	if err := w.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate %s: %w", w.describe(), err)
	}
	return nil
}

// ErrNoPrevious says a Deployment has no earlier revision to go back to.
var ErrNoPrevious = errors.New("no earlier revision recorded")

// ErrNoHistory says a kind has no revision history on the host to abort
// to.
var ErrNoHistory = errors.New("the host keeps revision history only of Deployments")

// Abort rolls a Deployment back to its previous revision (as kubectl
// rollout undo does): the revision's pod template, kept by the host's
// revision history, replaces the current one, and rolls out under the
// same budget and stages. A paused Deployment is refused, as kubectl
// does; other kinds are refused with ErrNoHistory.
func (w Workload) Abort(ctx context.Context) (string, error) {
	if !w.isDeployment() {
		return "", fmt.Errorf("cannot abort %s: %w; apply its previous template instead (a new revision rolls out under the same budget and stages)", w.name(), ErrNoHistory)
	}
	dep := &appsv1.Deployment{}
	if err := w.Client.Get(ctx, w.Key, dep); err != nil {
		return "", fmt.Errorf("deployment %s: %w", w.Key, err)
	}
	if dep.Spec.Paused {
		return "", fmt.Errorf("deployment %s is paused: resume it first (kubectl rollout resume)", w.Key)
	}
	list := &appsv1.ReplicaSetList{}
	if err := w.Client.List(ctx, list, client.InNamespace(w.Key.Namespace)); err != nil {
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
		return "", fmt.Errorf("deployment %s: %w", w.Key, ErrNoPrevious)
	}
	prev := history[i]
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}})
	if err != nil {
		return "", err
	}
	if err := w.Client.Patch(ctx, dep, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return "", fmt.Errorf("roll back deployment %s: %w", w.Key, err)
	}
	return fmt.Sprintf("%s: rolled back to revision %d", w.name(), revision(prev)), nil
}

func revision(rs appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
	return n
}
