package propagate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/policy"
)

// leaderPolicies returns the policies of the propagated workloads that
// reference a follower (tmpl), for policy.Adopt: a follower's adopt
// annotation is honoured only when each of them would honour it.
func (r *Reconciler) leaderPolicies(ctx context.Context, tmpl *unstructured.Unstructured) ([]policy.Chosen, error) {
	if tmpl.GetNamespace() == "" {
		return nil, nil
	}
	leaders := &v1alpha1.FederatedObjectList{}
	if err := r.Client.List(ctx, leaders, client.InNamespace(tmpl.GetNamespace()),
		client.MatchingFields{fedobj.IndexFollower: fedobj.FollowerKey(tmpl.GetKind(), tmpl.GetName())}); err != nil {
		return nil, fmt.Errorf("list the workloads following %s/%s: %w", tmpl.GetNamespace(), tmpl.GetName(), err)
	}
	var out []policy.Chosen
	for _, l := range leaders.Items {
		if !l.DeletionTimestamp.IsZero() || l.Spec.Policy == nil {
			continue
		}
		spec, err := fedobj.PolicySpec(ctx, r.Client, *l.Spec.Policy)
		if err != nil {
			return nil, fmt.Errorf("read the policy of %s/%s: %w", l.Namespace, l.Name, err)
		}
		out = append(out, policy.Chosen{Ref: *l.Spec.Policy, Spec: spec})
	}
	return out, nil
}
