package app

import (
	"strings"
	"testing"
)

func TestRolloutValidate(t *testing.T) {
	tests := []struct {
		verb, workload string
		wantErr        string
	}{
		{verb: "approve", workload: "web"},
		{verb: "approve", workload: "sts/db"},
		{verb: "resume", workload: "clonesets.apps.kruise.io/web"},
		{verb: "abort", workload: "web"},
		{verb: "abort", workload: "deploy/web"},
		{verb: "abort", workload: "Deployment/web"},
		{verb: "abort", workload: "deployments.v1.apps/web"},
		{verb: "abort", workload: "sts/db"}, // refused once its kind is known, before anything is changed
		{verb: "approve", workload: "", wantErr: "a workload is required"},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.workload, func(t *testing.T) {
			err := (&RolloutOptions{verb: tt.verb, Workload: tt.workload}).Validate()
			if tt.wantErr == "" && err != nil {
				t.Errorf("Validate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
