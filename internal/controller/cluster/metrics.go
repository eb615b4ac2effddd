package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_member_cluster_ready",
		Help: "Whether a member cluster is Ready (1), not Ready (0) or unreachable (-1), as its Ready condition says.",
	}, []string{"cluster"})
	evictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_cluster_evictions_total",
		Help: "Times a member cluster was tainted NoExecute for staying not Ready (cluster failover).",
	}, []string{"cluster"})
	suppressedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_cluster_eviction_suppressed",
		Help: "1 while a not-Ready member cluster is not evicted because most failure domains are disrupted (a disruption of the control plane's connectivity).",
	}, []string{"cluster"})
	heldGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_cluster_eviction_held",
		Help: "1 while a not-Ready member cluster is not tainted NoExecute because a failover brake holds it back; reason is EvictionSuppressed, ZonePartialDisruption, SmallFederation or RateLimited (its EvictionHeld condition says the same).",
	}, []string{"cluster", "reason"})
	clusterRateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_cluster_evictions_rate_limited_total",
		Help: "Times a member cluster due for a NoExecute taint waited because --eviction-clusters-per-minute was used up.",
	}, []string{"cluster"})
	zoneGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_failover_zone_state",
		Help: "State of a failure domain (the members' topology.kubernetes.io/zone label, else their region label; \"\" for members with neither): 0 Normal, 1 PartialDisruption, 2 FullDisruption.",
	}, []string{"zone"})
	insecureGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_member_cluster_insecure",
		Help: "1 while the control plane connects to a member cluster without transport security (plain http or TLS verification skipped), allowed by --allow-insecure-members; 0 otherwise.",
	}, []string{"cluster"})
	sessionsGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_member_cluster_sessions",
		Help: "Number of member clusters with a live connection (health probe, discovery and caches).",
	})
)

func init() {
	metrics.Registry.MustRegister(readyGauge, sessionsGauge, evictionsTotal, suppressedGauge, insecureGauge, heldGauge, clusterRateLimited, zoneGauge)
}
