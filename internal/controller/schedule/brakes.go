package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// reasonEvictionRateLimited is the Scheduled condition's reason while an
// object's move off an evicted cluster waits for its turn.
const reasonEvictionRateLimited = "EvictionRateLimited"

var (
	objectEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_failover_object_evictions_total",
		Help: "Objects whose placement dropped a member cluster tainted NoExecute for not being Ready (flotilla.io/unreachable or flotilla.io/not-ready), by that cluster.",
	}, []string{"cluster"})
	objectEvictionsLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_failover_object_evictions_rate_limited_total",
		Help: "Scheduling decisions that would have moved an object off a not-Ready member cluster but waited because --eviction-objects-per-minute-per-cluster was used up, by that cluster.",
	}, []string{"cluster"})
)

func init() {
	metrics.Registry.MustRegister(objectEvictions, objectEvictionsLimited)
}

// failedOver reports whether a cluster carries a NoExecute taint the
// cluster controller put there for not being Ready.
func failedOver(c *v1alpha1.MemberCluster) bool {
	for _, t := range c.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && (t.Key == v1alpha1.TaintUnreachable || t.Key == v1alpha1.TaintNotReady) {
			return true
		}
	}
	return false
}

// failoverDrops returns the clusters of current that next leaves out while
// they are tainted NoExecute for not being Ready: the moves the
// objects-per-minute limit applies to. Clusters drained by an operator,
// gone, or left for another reason (a policy or label change) are not
// counted.
func failoverDrops(current, next []v1alpha1.ClusterPlacement, clusters []*v1alpha1.MemberCluster) []string {
	kept := make(map[string]bool, len(next))
	for _, p := range next {
		kept[p.Cluster] = true
	}
	byName := make(map[string]*v1alpha1.MemberCluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	var out []string
	for _, p := range current {
		if c := byName[p.Cluster]; c != nil && !kept[p.Cluster] && failedOver(c) {
			out = append(out, p.Cluster)
		}
	}
	return out
}

// evicted counts the objects a written placement moved off failed clusters.
func evicted(drops []string) {
	for _, c := range drops {
		objectEvictions.WithLabelValues(c).Inc()
	}
}

// admitEviction takes a token of every dropped cluster's bucket for a
// decision that moves the object off them. When one is used up, it
// returns false, the Scheduled condition to report and when to decide
// again: when a token is due, spread over the burst so that many waiting
// objects do not all wake for the same token (the bucket fills up
// meanwhile, so the rate is kept).
func (r *Reconciler) admitEviction(drops []string, now time.Time) (bool, string, time.Duration) {
	if len(drops) == 0 {
		return true, "", 0
	}
	ok, wait := r.evictions.TakeAll(drops, now)
	if ok {
		return true, "", 0
	}
	for _, c := range drops {
		objectEvictionsLimited.WithLabelValues(c).Inc()
	}
	msg := fmt.Sprintf("moving off %s (not Ready, tainted NoExecute) waits for its turn: at most %g objects a minute leave a failed cluster (--eviction-objects-per-minute-per-cluster); the current placement stays in force until then",
		strings.Join(drops, ", "), r.EvictionObjectsPerMinute)
	spread := time.Duration(float64(time.Minute) / r.EvictionObjectsPerMinute * float64(r.evictionBurst))
	if spread > 0 {
		wait += rand.N(spread)
	}
	return false, msg, wait
}
