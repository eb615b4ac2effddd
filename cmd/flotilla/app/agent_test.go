package app

import (
	"strings"
	"testing"
	"time"
)

func TestAgentOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *AgentOptions)
		want string // "" = valid
	}{
		{name: "valid", edit: func(*AgentOptions) {}},
		{name: "no cluster", edit: func(o *AgentOptions) { o.Agent.Cluster = "" }, want: "--cluster is required"},
		{name: "no hub credential", edit: func(o *AgentOptions) { o.HubKubeconfig = "" }, want: "give one of --bootstrap-kubeconfig"},
		{name: "both hub credentials", edit: func(o *AgentOptions) { o.BootstrapKubeconfig = "bootstrap.kubeconfig" }, want: "give one of --bootstrap-kubeconfig"},
		{name: "bootstrap", edit: func(o *AgentOptions) {
			o.HubKubeconfig, o.BootstrapKubeconfig, o.Agent.CertDir, o.Agent.CertificateLifetime = "", "bootstrap.kubeconfig", "/var/lib/agent", time.Hour
		}},
		{name: "cert dir without bootstrap", edit: func(o *AgentOptions) { o.Agent.CertDir = "/var/lib/agent" }, want: "--cert-dir needs --bootstrap-kubeconfig"},
		{name: "certificate lifetime too short", edit: func(o *AgentOptions) {
			o.HubKubeconfig, o.BootstrapKubeconfig, o.Agent.CertificateLifetime = "", "bootstrap.kubeconfig", time.Minute
		}, want: "--certificate-lifetime must be at least 10m"},
		{name: "heartbeat too slow", edit: func(o *AgentOptions) { o.Agent.Heartbeat = 10 * time.Second }, want: "--heartbeat-interval must be positive and at most 6s"},
		{name: "no workers", edit: func(o *AgentOptions) { o.Agent.Workers = 0 }, want: "--concurrent-syncs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewAgentCmd(Streams{})
			if err := cmd.Flags().Parse([]string{"--cluster", "edge-1", "--hub-kubeconfig", "hub.kubeconfig"}); err != nil {
				t.Fatal(err)
			}
			o := &AgentOptions{}
			// The command's options are reached through its flags.
			o.Agent.Cluster, _ = cmd.Flags().GetString("cluster")
			o.HubKubeconfig, _ = cmd.Flags().GetString("hub-kubeconfig")
			o.Agent.Heartbeat, _ = cmd.Flags().GetDuration("heartbeat-interval")
			o.Agent.Session.ProbeInterval, _ = cmd.Flags().GetDuration("probe-interval")
			o.Agent.Session.DiscoveryInterval, _ = cmd.Flags().GetDuration("discovery-interval")
			o.Agent.Workers, _ = cmd.Flags().GetInt("concurrent-syncs")
			o.Agent.HubQPS, _ = cmd.Flags().GetFloat32("hub-api-qps")
			o.Agent.HubBurst, _ = cmd.Flags().GetInt("hub-api-burst")
			tt.edit(o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
