package agent_test

import (
	"encoding/json"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agent"
)

// TestReplacePatch: the usage report's merge patch nulls what the new
// report leaves out (a deleted member HPA, a cleared error), so that the
// merge does not keep the old values.
func TestReplacePatch(t *testing.T) {
	tests := []struct {
		name  string
		st    v1alpha1.IntentAutoscaleStatus
		nulls []string
	}{
		{"nothing to report", v1alpha1.IntentAutoscaleStatus{}, []string{"usage", "autoscalers", "error"}},
		{"usage only", v1alpha1.IntentAutoscaleStatus{Usage: []v1alpha1.ResourceUsage{{Resource: "cpu", Ready: 1, Used: 5}}}, []string{"autoscalers", "error"}},
		{"an error", v1alpha1.IntentAutoscaleStatus{Error: "no metrics API"}, []string{"usage", "autoscalers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := agent.ReplacePatch(tt.st)
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Status struct {
					Autoscale map[string]any `json:"autoscale"`
				} `json:"status"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.nulls {
				if v, ok := p.Status.Autoscale[k]; !ok || v != nil {
					t.Errorf("%s = %v (present %v), want an explicit null in %s", k, v, ok, body)
				}
			}
			if _, ok := p.Status.Autoscale["time"]; !ok {
				t.Errorf("no time in %s", body)
			}
		})
	}
}
