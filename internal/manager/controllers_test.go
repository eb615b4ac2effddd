package manager

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestEnabled(t *testing.T) {
	known := []string{"cluster", "placement", "status"}
	tests := []struct {
		name         string
		list         []string
		want         map[string]bool
		wantErr      bool
		wantErrParts []string
	}{
		{name: "all", list: []string{"*"}, want: map[string]bool{"cluster": true, "placement": true, "status": true}},
		{name: "all but one", list: []string{"*", "-cluster"}, want: map[string]bool{"placement": true, "status": true}},
		{name: "disabling before all still disables", list: []string{"-cluster", "*"}, want: map[string]bool{"placement": true, "status": true}},
		{name: "one", list: []string{"cluster"}, want: map[string]bool{"cluster": true}},
		{name: "two, with spaces", list: []string{" cluster", "status "}, want: map[string]bool{"cluster": true, "status": true}},
		{name: "enabled then disabled", list: []string{"cluster", "-cluster"}, want: map[string]bool{}},
		{name: "disabled then enabled", list: []string{"-cluster", "cluster"}, want: map[string]bool{"cluster": true}},
		{name: "only a disable enables nothing", list: []string{"-cluster"}, want: map[string]bool{}},
		{name: "empty list enables nothing", list: nil, want: map[string]bool{}},
		{name: "unknown name", list: []string{"*", "clsuter"}, wantErr: true, wantErrParts: []string{`"clsuter"`, "cluster, placement, status"}},
		{name: "unknown disabled name", list: []string{"*", "-nope"}, wantErr: true, wantErrParts: []string{`"nope"`, "cluster, placement, status"}},
		{name: "empty entry", list: []string{"cluster", ""}, wantErr: true, wantErrParts: []string{"empty"}},
		{name: "blank entry", list: []string{"  "}, wantErr: true, wantErrParts: []string{"empty"}},
		{name: "lone dash", list: []string{"*", "-"}, wantErr: true, wantErrParts: []string{"empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Enabled(tt.list, known)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Enabled(%q) = %v, want an error", tt.list, got)
				}
				for _, part := range tt.wantErrParts {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("Enabled(%q) error %q does not mention %s", tt.list, err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Enabled(%q) error = %v, want none", tt.list, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Enabled(%q) mismatch (-want +got):\n%s", tt.list, diff)
			}
			for name, on := range got {
				if !on {
					t.Errorf("Enabled(%q) lists %s as false; disabled controllers must be left out", tt.list, name)
				}
			}
		})
	}
}

func TestEnabledWithRegisteredControllers(t *testing.T) {
	names := ControllerNames()
	if d := cmp.Diff([]string{"agent-signer", "autoscale", "cluster", "federate", "interpreters", "migrate", "propagate", "rollout", "schedule", "status"}, names); d != "" {
		t.Fatalf("ControllerNames() mismatch (-want +got):\n%s", d)
	}
	tests := []struct {
		name    string
		list    []string
		want    map[string]bool
		wantErr string
	}{
		{name: "*", list: []string{"*"}, want: map[string]bool{"agent-signer": true, "autoscale": true, "cluster": true, "federate": true, "interpreters": true, "migrate": true, "propagate": true, "rollout": true, "schedule": true, "status": true}},
		{name: "*,-cluster", list: []string{"*", "-cluster"}, want: map[string]bool{"agent-signer": true, "autoscale": true, "federate": true, "interpreters": true, "migrate": true, "propagate": true, "rollout": true, "schedule": true, "status": true}},
		{name: "cluster", list: []string{"cluster"}, want: map[string]bool{"cluster": true}},
		{name: "unknown", list: []string{"scheduler"}, wantErr: `unknown controller "scheduler" (known: agent-signer, autoscale, cluster, federate, interpreters, migrate, propagate, rollout, schedule, status)`},
		{name: "empty", list: []string{""}, wantErr: "empty controller name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Enabled(tt.list, names)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Enabled(%q) = %v, %v; want error containing %q", tt.list, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Enabled(%q) error = %v, want none", tt.list, err)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Enabled(%q) mismatch (-want +got):\n%s", tt.list, d)
			}
		})
	}
}

func TestControllerNamesSorted(t *testing.T) {
	names := ControllerNames()
	if len(names) != len(Controllers) {
		t.Fatalf("ControllerNames() has %d names, want %d", len(names), len(Controllers))
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("ControllerNames() = %q, want sorted and unique", names)
		}
	}
	for _, c := range Controllers {
		if c.Setup == nil {
			t.Errorf("controller %q has no Setup", c.Name)
		}
	}
}
