package propagate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// evictionSeconds measures graceful evictions: from a cluster leaving a
// workload's placement to its replacements being Ready ("replaced"), or to
// the graceful period running out ("timeout").
var evictionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "flotilla_failover_duration_seconds",
	Help:    "Time from a cluster leaving a workload's placement (failover, drain, rescheduling) until its replacement replicas were Ready elsewhere (result=replaced) or the graceful eviction period ran out (result=timeout).",
	Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(evictionSeconds)
}
