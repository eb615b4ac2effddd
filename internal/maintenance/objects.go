package maintenance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// ListedMax is how many objects an error message names before "and N
// more".
const ListedMax = 10

// ErrStranded is wrapped by drain's errors when objects have nowhere else
// to go.
var ErrStranded = errors.New("objects have nowhere else to go")

// Object is a FederatedObject still placed on, or still holding a copy
// in, the cluster being drained.
type Object struct {
	// Namespace and Name of the FederatedObject.
	Namespace, Name string
	// Reason is the state of the cluster's copy in status.clusters; empty
	// while the status does not list the cluster.
	Reason v1alpha1.PropagationReason
}

// String is namespace/name with the copy's state.
func (r Object) String() string {
	reason := string(r.Reason)
	if reason == "" {
		reason = "placed, no status yet"
	}
	return fmt.Sprintf("%s/%s (%s)", r.Namespace, r.Name, reason)
}

// Remaining returns the objects that have cluster in their spec.placement
// or status.clusters, sorted by namespace and name. A copy kept on purpose
// in a cluster that left the placement (Retained: a claim's, a
// namespace's) does not count: it stays, whatever the drain waits for.
func Remaining(objs []v1alpha1.FederatedObject, cluster string) []Object {
	var out []Object
	for i := range objs {
		fo := &objs[i]
		r := Object{Namespace: fo.Namespace, Name: fo.Name}
		copied := false
		for _, s := range fo.Status.Clusters {
			if s.Cluster == cluster {
				r.Reason, copied = s.Reason, s.Reason != v1alpha1.PropagationRetained
				break
			}
		}
		if placedOn(fo, cluster) || copied {
			out = append(out, r)
		}
	}
	sortObjects(out)
	return out
}

// OnlyOn returns the objects placed on cluster and on no other cluster.
func OnlyOn(objs []v1alpha1.FederatedObject, cluster string) []Object {
	var out []Object
	for i := range objs {
		p := objs[i].Placement()
		if len(p) == 1 && p[0].Cluster == cluster {
			out = append(out, Object{Namespace: objs[i].Namespace, Name: objs[i].Name})
		}
	}
	sortObjects(out)
	return out
}

// Stranded returns the objects that the scheduler could not move off the
// cluster: still placed there, with Scheduled=False/Unschedulable for
// their current generation (no cluster fits them, so their placement is
// kept).
func Stranded(objs []v1alpha1.FederatedObject, cluster string) []Object {
	var out []Object
	for i := range objs {
		fo := &objs[i]
		if !placedOn(fo, cluster) {
			continue
		}
		c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionScheduled)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonUnschedulable && c.ObservedGeneration == fo.Generation {
			out = append(out, Object{Namespace: fo.Namespace, Name: fo.Name, Reason: "nowhere to go"})
		}
	}
	sortObjects(out)
	return out
}

// EligibleOthers are the member clusters other than name that could take
// objects: Ready, not being deleted, without NoSchedule or NoExecute
// taints.
func EligibleOthers(clusters []v1alpha1.MemberCluster, name string) []string {
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

// StrandedError says which objects keep running on cluster because no
// other cluster can take them; it wraps ErrStranded.
func StrandedError(cluster string, objs []Object) error {
	return fmt.Errorf("%w: membercluster/%s: %d objects keep running there because no other cluster can take them: %s; see `kubectl get fo -A` (SCHEDULED) for why, make room for them elsewhere, or use `flotilla drain %s --force` to delete them from %s",
		ErrStranded, cluster, len(objs), Names(objs), cluster, cluster)
}

// TimeoutError says which objects are still on cluster after timeout.
func TimeoutError(cluster string, timeout time.Duration, remaining []Object) error {
	names := make([]string, 0, ListedMax+1)
	for i, r := range remaining {
		if i == ListedMax {
			names = append(names, fmt.Sprintf("and %d more", len(remaining)-ListedMax))
			break
		}
		names = append(names, r.String())
	}
	return fmt.Errorf("membercluster/%s not drained after %s: %d objects remain: %s; objects whose policy tolerates the taint %s (placement.tolerations) stay on the cluster",
		cluster, timeout, len(remaining), strings.Join(names, ", "), v1alpha1.TaintDraining)
}

// Names lists up to ListedMax objects as namespace/name.
func Names(objs []Object) string {
	names := make([]string, 0, ListedMax+1)
	for i, r := range objs {
		if i == ListedMax {
			names = append(names, fmt.Sprintf("and %d more", len(objs)-ListedMax))
			break
		}
		names = append(names, r.Namespace+"/"+r.Name)
	}
	return strings.Join(names, ", ")
}

func placedOn(fo *v1alpha1.FederatedObject, cluster string) bool {
	return slices.ContainsFunc(fo.Placement(), func(p v1alpha1.ClusterPlacement) bool { return p.Cluster == cluster })
}

func sortObjects(out []Object) {
	slices.SortFunc(out, func(a, b Object) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
