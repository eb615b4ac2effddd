package schedule

import (
	"context"
	"errors"

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
// placed on, keeping its clusters, the Scheduled condition and the basis
// of the decision in force. It is how a take-over tells the scheduler
// what the members really run (a federated HPA taking the replicas over
// from the members' own autoscalers): the basis unchanged, the scheduler
// does not decide again until something it depends on changes, such as
// the host's replicas set to the counts' sum next; then, with the same
// total and avoidDisruption, it keeps them, and later changes of the
// total start from them. The write is conditional on fo's
// resourceVersion (a conflict when the scheduler wrote meanwhile).
// Other clusters, a placement without counts or with ordinal ranges, or
// no decision in force are ErrSeedMismatch.
func Seed(ctx context.Context, c client.Client, fo *v1alpha1.FederatedObject, counts map[string]int32) error {
	cond := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
	current := fo.Placement()
	if cond == nil || cond.Status != metav1.ConditionTrue || len(current) != len(counts) || len(fo.Spec.Placement) > 0 {
		return ErrSeedMismatch
	}
	placement := make([]v1alpha1.ClusterPlacement, len(current))
	for i, p := range current {
		n, ok := counts[p.Cluster]
		if !ok || p.Replicas == nil || p.OrdinalStart != nil {
			return ErrSeedMismatch
		}
		placement[i] = v1alpha1.ClusterPlacement{Cluster: p.Cluster, Replicas: ptr.To(n)}
	}
	_, err := fedobj.ApplyStatus(ctx, c, fo, fedobj.StatusApply{Manager: v1alpha1.FieldManagerSchedule, ResourceVersion: fo.ResourceVersion,
		Status: v1alpha1.FederatedObjectStatus{
			Conditions:        []metav1.Condition{*cond},
			ScheduledClusters: placement,
			Placement:         summary(placement),
			SchedulingBasis:   fo.Status.SchedulingBasis,
		}})
	return err
}
