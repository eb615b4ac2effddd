package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// othersStage names the stage of the placed clusters no stage of the
// policy takes.
const othersStage = v1alpha1.RolloutOthersStage

// +kubebuilder:rbac:groups=flotilla.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch

// stages resolves the policy's rollout stages over the members: each
// member's Stage index, and the stages in order (with a last one of the
// clusters no stage takes). A stage naming a cluster that is not a
// MemberCluster is an error the condition shows: rolling in an order
// nobody meant is worse than not rolling.
func (r *Reconciler) stages(ctx context.Context, fo *v1alpha1.FederatedObject, members []rollout.Member, clusterLabels map[string]map[string]string) ([]rollout.Stage, error) {
	if fo.Spec.Policy == nil {
		return nil, nil
	}
	spec, err := fedobj.PolicySpec(ctx, r.Client, *fo.Spec.Policy)
	if err != nil || spec == nil || spec.Rollout == nil || len(spec.Rollout.Stages) == 0 {
		return nil, err
	}
	var out []rollout.Stage
	selectors := make([]labels.Selector, len(spec.Rollout.Stages))
	for i, s := range spec.Rollout.Stages {
		st := rollout.Stage{Name: s.Name, After: s.After}
		if s.PauseSeconds != nil {
			st.Pause = time.Duration(*s.PauseSeconds) * time.Second
		}
		if s.MinAvailablePercent != nil {
			st.MinAvailablePercent = *s.MinAvailablePercent
		}
		out = append(out, st)
		if s.LabelSelector != nil {
			if selectors[i], err = metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
				return nil, invalidStages{fmt.Errorf("stage %s: labelSelector: %w", s.Name, err)}
			}
		}
		for _, name := range s.ClusterNames {
			err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.MemberCluster{}, client.UnsafeDisableDeepCopy)
			switch {
			case apierrors.IsNotFound(err):
				return nil, invalidStages{fmt.Errorf("stage %s names cluster %s, which is not a MemberCluster", s.Name, name)}
			case err != nil:
				return nil, err
			}
		}
	}
	others := false
	for i := range members {
		members[i].Stage = len(out)
		for j, s := range spec.Rollout.Stages {
			if slices.Contains(s.ClusterNames, members[i].Cluster) || (selectors[j] != nil && selectors[j].Matches(labels.Set(clusterLabels[members[i].Cluster]))) {
				members[i].Stage = j
				break
			}
		}
		others = others || members[i].Stage == len(out)
	}
	if others {
		name := othersStage
		for slices.ContainsFunc(out, func(s rollout.Stage) bool { return s.Name == name }) {
			name += "-"
		}
		out = append(out, rollout.Stage{Name: name, After: v1alpha1.GateContinue})
	}
	return out, nil
}

// invalidStages is an error of the policy's stages themselves (as opposed
// to a failed read, which is retried).
type invalidStages struct{ error }

// approvals reads the host object's approval and resume annotations
// ("<revision>/<stage>") for revision: how many stages, from the first,
// are approved and resumed (rollout.Input).
func approvals(tmpl *unstructured.Unstructured, revision string, stages []rollout.Stage) (approved, resumed int) {
	a := tmpl.GetAnnotations()
	return through(a[v1alpha1.AnnotationRolloutApproved], revision, stages), through(a[v1alpha1.AnnotationRolloutResumed], revision, stages)
}

// through is how many stages, from the first, a "<revision>/<stage>"
// value covers for revision: up to and with the stage it names (0:
// another revision, or no such stage).
func through(value, revision string, stages []rollout.Stage) int {
	rev, stage, ok := strings.Cut(value, "/")
	if !ok || rev != revision {
		return 0
	}
	return slices.IndexFunc(stages, func(s rollout.Stage) bool { return s.Name == stage }) + 1
}
