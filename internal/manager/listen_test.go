package manager

import (
	"net"
	"strings"
	"testing"
)

// Nothing listens beyond the loopback interface unless the operator says
// so.
func TestDefaultListenAddressesAreLoopback(t *testing.T) {
	o := DefaultOptions()
	for _, a := range []struct{ flag, addr string }{
		{"--metrics-bind-address", o.MetricsAddr},
		{"--health-probe-bind-address", o.ProbeAddr},
		{"--pprof-bind-address", o.PprofAddr},
	} {
		if a.addr == "0" {
			continue // disabled
		}
		host, _, err := net.SplitHostPort(a.addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("%s defaults to %q, want a loopback address", a.flag, a.addr)
		}
	}
	if o.MetricsSecure {
		t.Error("--metrics-secure is on by default; loopback plain HTTP is the default")
	}
}

func TestExposureWarnings(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Options)
		want []string // a fragment of each warning, in order
	}{
		{name: "defaults", edit: func(*Options) {}},
		{name: "all disabled", edit: func(o *Options) { o.MetricsAddr, o.ProbeAddr, o.PprofAddr = "0", "0", "0" }},
		{name: "pprof unset", edit: func(o *Options) { o.PprofAddr = "" }},
		{name: "localhost and IPv6 loopback", edit: func(o *Options) { o.MetricsAddr, o.PprofAddr = "localhost:8080", "[::1]:6060" }},
		{name: "metrics on all interfaces", edit: func(o *Options) { o.MetricsAddr = ":8080" }, want: []string{"--metrics-bind-address=:8080"}},
		{name: "metrics on all interfaces, secure", edit: func(o *Options) { o.MetricsAddr, o.MetricsSecure = ":8443", true }},
		{name: "metrics on a pod IP", edit: func(o *Options) { o.MetricsAddr = "10.0.0.7:8080" }, want: []string{"--metrics-bind-address=10.0.0.7:8080"}},
		{name: "metrics on the controller-runtime default (empty)", edit: func(o *Options) { o.MetricsAddr = "" }, want: []string{"--metrics-bind-address="}},
		{name: "pprof on all interfaces", edit: func(o *Options) { o.PprofAddr = "0.0.0.0:6060" }, want: []string{"--pprof-bind-address=0.0.0.0:6060"}},
		{name: "a host name may resolve anywhere", edit: func(o *Options) { o.MetricsAddr = "flotilla.example:8080" }, want: []string{"flotilla.example:8080"}},
		{name: "probes beyond loopback are fine (kubelet)", edit: func(o *Options) { o.ProbeAddr = ":8081" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.edit(&o)
			got := ExposureWarnings(o)
			if len(got) != len(tt.want) {
				t.Fatalf("ExposureWarnings() = %q, want %d warning(s)", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q does not mention %q", got[i], w)
				}
			}
		})
	}
}
