package ledger

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	reservedReplicasDesc = prometheus.NewDesc("flotilla_scheduler_reserved_replicas",
		"Replicas the scheduler placed in a member cluster that have no pod bound to a node there yet (the ledger's reservations).",
		[]string{"cluster"}, nil)
	reservedResourceDesc = prometheus.NewDesc("flotilla_scheduler_reserved_resource",
		"Resources the ledger reserves in a member cluster for replicas not started yet: cpu in cores, memory-like resources in bytes, pods and extended resources in units.",
		[]string{"cluster", "resource"}, nil)
)

// exposed is the ledger the metrics report (the process's scheduler's).
var exposed atomic.Pointer[Ledger]

// Expose makes l the ledger the metrics report.
func Expose(l *Ledger) { exposed.Store(l) }

type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- reservedReplicasDesc
	ch <- reservedResourceDesc
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	l := exposed.Load()
	if l == nil {
		return
	}
	for cluster, t := range l.Totals() {
		ch <- prometheus.MustNewConstMetric(reservedReplicasDesc, prometheus.GaugeValue, float64(t.Replicas), cluster)
		for name, q := range t.ResourceList() {
			ch <- prometheus.MustNewConstMetric(reservedResourceDesc, prometheus.GaugeValue, q.AsApproximateFloat64(), cluster, string(name))
		}
	}
}

func init() { metrics.Registry.MustRegister(collector{}) }
