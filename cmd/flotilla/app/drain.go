package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// errStranded is wrapped by drain when objects have nowhere else to go.
var errStranded = errors.New("objects have nowhere else to go")

// checkDrain refuses a drain that would strand workloads, unless forced:
// when no other member cluster is Ready and free of NoSchedule and
// NoExecute taints, nothing placed on the cluster could move. A forced
// drain says which objects run only on the cluster and so will be deleted
// if no other cluster takes them.
func (o *MaintenanceOptions) checkDrain(ctx context.Context) error {
	var clusters v1alpha1.MemberClusterList
	if err := o.client.List(ctx, &clusters); err != nil {
		return fmt.Errorf("list MemberClusters: %w", err)
	}
	if !slices.ContainsFunc(clusters.Items, func(mc v1alpha1.MemberCluster) bool { return mc.Name == o.Cluster }) {
		return fmt.Errorf("membercluster %q not found", o.Cluster)
	}
	if o.Force {
		var objs v1alpha1.FederatedObjectList
		if err := o.client.List(ctx, &objs); err != nil {
			return fmt.Errorf("list FederatedObjects: %w", err)
		}
		if only := onlyOn(objs.Items, o.Cluster); len(only) > 0 {
			fmt.Fprintf(o.streams.Out, "drain --force: %d objects run only on %s and will be deleted from it if no other cluster takes them: %s\n",
				len(only), o.Cluster, listed(only))
		}
		return nil
	}
	if others := eligibleOthers(clusters.Items, o.Cluster); len(others) == 0 {
		return fmt.Errorf("refusing to drain %s: no other member cluster is Ready and free of NoSchedule/NoExecute taints, so its objects would have nowhere to go (they would keep running there and the drain would never finish); make another cluster available, or use --force to delete them from %s", o.Cluster, o.Cluster)
	}
	return nil
}

// eligibleOthers are the member clusters other than name that could take
// objects: Ready, not being deleted, without NoSchedule or NoExecute taints.
func eligibleOthers(clusters []v1alpha1.MemberCluster, name string) []string {
	var out []string
	for i := range clusters {
		mc := &clusters[i]
		if mc.Name == name || !mc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady) {
			continue
		}
		if slices.ContainsFunc(mc.Spec.Taints, func(t corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}) {
			continue
		}
		out = append(out, mc.Name)
	}
	return out
}

// onlyOn returns the objects placed on cluster and on no other cluster.
func onlyOn(objs []v1alpha1.FederatedObject, cluster string) []remainingObject {
	var out []remainingObject
	for i := range objs {
		p := objs[i].Spec.Placement
		if len(p) == 1 && p[0].Cluster == cluster {
			out = append(out, remainingObject{Namespace: objs[i].Namespace, Name: objs[i].Name})
		}
	}
	sortRemaining(out)
	return out
}

// stranded returns the remaining objects that the scheduler could not move
// off the cluster: still placed there, with Scheduled=False/Unschedulable
// (no cluster fits them, so their placement is kept).
func stranded(objs []v1alpha1.FederatedObject, cluster string) []remainingObject {
	var out []remainingObject
	for i := range objs {
		fo := &objs[i]
		if !slices.ContainsFunc(fo.Spec.Placement, func(p v1alpha1.ClusterPlacement) bool { return p.Cluster == cluster }) {
			continue
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Unschedulable" && c.ObservedGeneration == fo.Generation {
			out = append(out, remainingObject{Namespace: fo.Namespace, Name: fo.Name, Reason: "nowhere to go"})
		}
	}
	sortRemaining(out)
	return out
}

// strandedError says which objects keep running on cluster because no
// other cluster can take them.
func strandedError(cluster string, objs []remainingObject) error {
	return fmt.Errorf("%w: membercluster/%s: %d objects keep running there because no other cluster can take them: %s; see `kubectl get fo -A` (SCHEDULED) for why, make room for them elsewhere, or use `flotilla drain %s --force` to delete them from %s",
		errStranded, cluster, len(objs), listed(objs), cluster, cluster)
}

// listed names up to drainListedMax objects.
func listed(objs []remainingObject) string {
	names := make([]string, 0, drainListedMax+1)
	for i, r := range objs {
		if i == drainListedMax {
			names = append(names, fmt.Sprintf("and %d more", len(objs)-drainListedMax))
			break
		}
		names = append(names, r.Namespace+"/"+r.Name)
	}
	return strings.Join(names, ", ")
}

func sortRemaining(out []remainingObject) {
	slices.SortFunc(out, func(a, b remainingObject) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
