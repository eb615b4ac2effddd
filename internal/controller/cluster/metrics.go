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
	sessionsGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_member_cluster_sessions",
		Help: "Number of member clusters with a live connection (health probe, discovery and caches).",
	})
)

func init() {
	metrics.Registry.MustRegister(readyGauge, sessionsGauge)
}
