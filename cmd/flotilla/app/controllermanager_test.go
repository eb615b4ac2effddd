package app

import (
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/internal/manager"
)

// TestControllerManagerBrakeFlags: the failover brakes' flags exist with
// their defaults, reach the options, and bad values are refused.
func TestControllerManagerBrakeFlags(t *testing.T) {
	cmd := NewControllerManagerCmd(Streams{Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	for flag, want := range map[string]string{
		"cluster-failover-disruption-threshold":   "0.55",
		"unhealthy-zone-threshold":                "0.55",
		"small-federation-size":                   "3",
		"small-federation-grace-period":           "5m0s",
		"eviction-clusters-per-minute":            "1",
		"eviction-objects-per-minute-per-cluster": "60",
	} {
		f := cmd.Flags().Lookup(flag)
		if f == nil {
			t.Errorf("--%s missing", flag)
			continue
		}
		if f.DefValue != want {
			t.Errorf("--%s default %s, want %s", flag, f.DefValue, want)
		}
	}
	tests := []struct {
		name string
		args []string
		want string // "" when valid
	}{
		{name: "defaults"},
		{name: "limits off", args: []string{"--eviction-clusters-per-minute=0", "--eviction-objects-per-minute-per-cluster=0", "--small-federation-size=0"}},
		{name: "zone threshold above 1", args: []string{"--unhealthy-zone-threshold=1.5"}, want: "--unhealthy-zone-threshold"},
		{name: "zone threshold 0", args: []string{"--unhealthy-zone-threshold=0"}, want: "--unhealthy-zone-threshold"},
		{name: "negative size", args: []string{"--small-federation-size=-1"}, want: "--small-federation-size"},
		{name: "negative grace", args: []string{"--small-federation-grace-period=-1s"}, want: "--small-federation-grace-period"},
		{name: "negative cluster rate", args: []string{"--eviction-clusters-per-minute=-1"}, want: "must not be negative"},
		{name: "negative object rate", args: []string{"--eviction-objects-per-minute-per-cluster=-2"}, want: "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &ControllerManagerOptions{Manager: manager.DefaultOptions()}
			c := NewControllerManagerCmd(Streams{Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
			if err := c.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			// The command's options are private to it: read the flags back.
			fs := c.Flags()
			o.Manager.Failover.UnhealthyZoneThreshold, _ = fs.GetFloat64("unhealthy-zone-threshold")
			o.Manager.Failover.SmallFederationSize, _ = fs.GetInt("small-federation-size")
			o.Manager.Failover.SmallFederationGracePeriod, _ = fs.GetDuration("small-federation-grace-period")
			o.Manager.Failover.ClustersPerMinute, _ = fs.GetFloat64("eviction-clusters-per-minute")
			o.Manager.Failover.ObjectsPerMinutePerCluster, _ = fs.GetFloat64("eviction-objects-per-minute-per-cluster")
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestControllerManagerMemoryLimitFlag(t *testing.T) {
	tests := []struct {
		value string
		want  int64
		err   bool
	}{
		{value: "", want: 0},
		{value: "0", want: 0},
		{value: "2Gi", want: 2 << 30},
		{value: "500M", want: 500_000_000},
		{value: "-1Gi", err: true},
		{value: "lots", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			o := &ControllerManagerOptions{Manager: manager.DefaultOptions(), MemoryLimit: tc.value}
			err := o.Validate()
			if (err != nil) != tc.err || (err == nil && o.memoryLimit != tc.want) {
				t.Errorf("Validate() = %v, limit %d; want error %v, limit %d", err, o.memoryLimit, tc.err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "--memory-limit") {
				t.Errorf("error %q does not name the flag", err)
			}
		})
	}
}

func TestValidateWebhook(t *testing.T) {
	tests := []struct {
		name string
		m    manager.Options
		want string // "" when valid
	}{
		{name: "off"},
		{name: "served and installed", m: manager.Options{WebhookPort: 9443, WebhookCertDir: "/pki", WebhookURL: "https://127.0.0.1:9443", WebhookCAFile: "/ca.crt"}},
		{name: "served, installed by the admin", m: manager.Options{WebhookPort: 9443, WebhookCertDir: "/pki"}},
		{name: "no certificate", m: manager.Options{WebhookPort: 9443}, want: "--webhook-cert-dir"},
		{name: "flags without a port", m: manager.Options{WebhookURL: "https://x"}, want: "need --webhook-port"},
		{name: "URL without CA", m: manager.Options{WebhookPort: 9443, WebhookCertDir: "/pki", WebhookURL: "https://x"}, want: "go together"},
		{name: "plain http", m: manager.Options{WebhookPort: 9443, WebhookCertDir: "/pki", WebhookURL: "http://x", WebhookCAFile: "/ca"}, want: "https://"},
		{name: "bad port", m: manager.Options{WebhookPort: 70000, WebhookCertDir: "/pki"}, want: "--webhook-port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateWebhook(tc.m)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
