// Package recovery keeps a panic in a background goroutine from killing the
// controller-manager: the panic is logged with its stack, counted in
// flotilla_recovered_panics_total{component} and handed back to the caller
// as an error, which turns it into a failed (and retried) result.
//
// controller-runtime already recovers panics in Reconcile itself; use this
// package at the start of every goroutine the controllers start on their
// own (member writes in flight, per-cluster fan-out).
package recovery

import (
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// recovered counts the panics Run recovered, by component.
var recovered = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flotilla_recovered_panics_total",
	Help: "Panics recovered in background goroutines (the work they were doing failed and is retried), by component.",
}, []string{"component"})

func init() {
	metrics.Registry.MustRegister(recovered)
}

// PanicError is the error Run returns for a recovered panic.
type PanicError struct {
	// Component is the component Run was called for.
	Component string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

// Error says which component panicked and with what, without the stack
// (it is logged once, by Run).
func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error: %s panicked: %v", e.Component, e.Value)
}

// Run calls fn and returns nil, or a *PanicError when fn panicked: the
// panic is logged with its stack and counted, and never re-raised.
func Run(logger logr.Logger, component string, fn func()) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		perr := &PanicError{Component: component, Value: v, Stack: debug.Stack()}
		recovered.WithLabelValues(component).Inc()
		logger.Error(perr, "Recovered from a panic; the work fails and is retried", "component", component, "stack", string(perr.Stack))
		err = perr
	}()
	fn()
	return nil
}
