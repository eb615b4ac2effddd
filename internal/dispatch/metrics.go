package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// verifyReads counts the copies read from a member because their
// projection's owned-field hash differed from the intent's while the
// template hash matched (drift, or a value the member spells its own way).
var verifyReads = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "flotilla_member_copy_reads_total",
	Help: "Member copies read in full before a write decision because their cached projection did not match the intent (drift in the member, or a value the member stores differently).",
})

func init() {
	metrics.Registry.MustRegister(verifyReads)
}
