package schedule

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
)

// ErrSeedMismatch says a seeded placement does not fit the decision in
// force: other clusters, another total, or no decision yet.
var ErrSeedMismatch = errors.New("the seeded placement does not fit the decision in force")

// Seed records counts as the replicas of the clusters a divided object is
// placed on, keeping its clusters, its total, the Scheduled condition
// and the basis of the decision in force. It is how a take-over tells
// the scheduler what the members really run (a federated HPA taking the
// replicas over from the members' own autoscalers): with the same total
// and avoidDisruption, the next decision keeps them, and later changes
// of the total start from them. Anything else is ErrSeedMismatch.
func Seed(ctx context.Context, c client.Client, fo *v1alpha1.FederatedObject, counts map[string]int32) error {
	cond := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
	current := fo.Placement()
	if cond == nil || cond.Status != metav1.ConditionTrue || len(current) != len(counts) {
		return ErrSeedMismatch
	}
	var before, after int32
	placement := make([]v1alpha1.ClusterPlacement, len(current))
	for i, p := range current {
		n, ok := counts[p.Cluster]
		if !ok || p.Replicas == nil || p.OrdinalStart != nil {
			return ErrSeedMismatch
		}
		before += *p.Replicas
		after += n
		placement[i] = v1alpha1.ClusterPlacement{Cluster: p.Cluster, Replicas: ptr.To(n)}
	}
	if before != after {
		return fmt.Errorf("%w: %d replicas in force, %d seeded", ErrSeedMismatch, before, after)
	}
	_, err := fedobj.ApplyStatus(ctx, c, fo, fedobj.StatusApply{Manager: v1alpha1.FieldManagerSchedule, Status: v1alpha1.FederatedObjectStatus{
		Conditions:        []metav1.Condition{*cond},
		ScheduledClusters: placement,
		Placement:         summary(placement),
		SchedulingBasis:   fo.Status.SchedulingBasis,
	}})
	return err
}
