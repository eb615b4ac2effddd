package recovery

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		fn        func()
		wantErr   string // "" for no error
		wantCount float64
	}{
		{name: "no panic", fn: func() {}, wantCount: 0},
		{name: "panic with a string", fn: func() { panic("boom") }, wantErr: "internal error: test-1 panicked: boom", wantCount: 1},
		{name: "panic with an error", fn: func() { panic(errors.New("bad state")) }, wantErr: "bad state", wantCount: 1},
		{name: "nil map write", fn: func() {
			var m map[string]int
			m["x"] = 1
		}, wantErr: "assignment to entry in nil map", wantCount: 1},
		{name: "panic(nil)", fn: func() { panic(nil) }, wantErr: "panic called with nil argument", wantCount: 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			component := fmt.Sprintf("test-%d", i)
			before := count(t, component)
			err := Run(logr.Discard(), component, tt.fn)
			if got := count(t, component) - before; got != tt.wantCount {
				t.Errorf("flotilla_recovered_panics_total{component=%q} grew by %v, want %v", component, got, tt.wantCount)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Run() = %v, want nil", err)
				}
				return
			}
			var perr *PanicError
			if !errors.As(err, &perr) {
				t.Fatalf("Run() = %v, want a *PanicError", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Run() = %q, want it to contain %q", err, tt.wantErr)
			}
			if perr.Component != component || !strings.Contains(string(perr.Stack), "recovery.TestRun") {
				t.Errorf("PanicError component %q, stack without the panicking test function:\n%s", perr.Component, perr.Stack)
			}
		})
	}
}

// count reads flotilla_recovered_panics_total{component}.
func count(t *testing.T, component string) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := recovered.WithLabelValues(component).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
