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
		Help: "1 while a not-Ready member cluster is not evicted because most members are not Ready (a disruption of the control plane's connectivity).",
	}, []string{"cluster"})
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
	metrics.Registry.MustRegister(readyGauge, sessionsGauge, evictionsTotal, suppressedGauge, insecureGauge)
}
