package localenv

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string // substrings, in order; none means valid
	}{
		{name: "defaults", mutate: func(*Options) {}},
		{name: "host only", mutate: func(o *Options) { o.Members = 0 }},
		{name: "apiserver-only", mutate: func(o *Options) { o.MemberMode = ModeAPIServerOnly }},
		{name: "labels", mutate: func(o *Options) { o.NodeLabels = map[string]string{"tier": "gold", "example.com/rack": "r1"} }},
		{name: "negative members", mutate: func(o *Options) { o.Members = -1 }, wantErr: []string{"--members must be between 0 and 64, got -1"}},
		{name: "too many members", mutate: func(o *Options) { o.Members = 65 }, wantErr: []string{"--members must be between 0 and 64, got 65"}},
		{name: "negative nodes", mutate: func(o *Options) { o.NodesPerMember = -3 }, wantErr: []string{"--nodes must not be negative, got -3"}},
		{name: "unknown mode", mutate: func(o *Options) { o.MemberMode = "tiny" }, wantErr: []string{`--member-mode must be "full" or "apiserver-only", got "tiny"`}},
		{name: "bad cpu", mutate: func(o *Options) { o.NodeCPU = "lots" }, wantErr: []string{`--node-cpu: "lots" is not a quantity`}},
		{name: "zero memory", mutate: func(o *Options) { o.NodeMemory = "0" }, wantErr: []string{"--node-memory must be positive, got 0"}},
		{name: "bad label key", mutate: func(o *Options) { o.NodeLabels = map[string]string{"a b": "x"} }, wantErr: []string{`--node-labels: key "a b"`}},
		{name: "bad label value", mutate: func(o *Options) { o.NodeLabels = map[string]string{"a": "x y"} }, wantErr: []string{`--node-labels: value "x y"`}},
		{name: "empty state dir", mutate: func(o *Options) { o.StateDir = "" }, wantErr: []string{"--state-dir must not be empty"}},
		{
			name:    "several errors, sorted",
			mutate:  func(o *Options) { o.Members = -1; o.NodesPerMember = -1 },
			wantErr: []string{"--members must be", "--nodes must not be negative"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.StateDir = "/tmp/x"
			tt.mutate(&o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %v", tt.wantErr)
			}
			msg := err.Error()
			pos := 0
			for _, w := range tt.wantErr {
				i := strings.Index(msg[pos:], w)
				if i < 0 {
					t.Fatalf("Validate() = %q, want %q (in order)", msg, w)
				}
				pos += i + len(w)
			}
		})
	}
}

func TestMemberTopology(t *testing.T) {
	tests := []struct {
		index            int
		wantRegion, want string
	}{
		{1, "us-east", "us-east-a"},
		{2, "us-east", "us-east-b"},
		{3, "eu-west", "eu-west-a"},
		{8, "sa-east", "sa-east-b"},
		{9, "us-east-2", "us-east-2-a"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		region, zone := MemberTopology(tt.index)
		if region != tt.wantRegion || zone != tt.want {
			t.Errorf("MemberTopology(%d) = %s, %s; want %s, %s", tt.index, region, zone, tt.wantRegion, tt.want)
		}
	}
	for i := 1; i <= MaxMembers; i++ {
		_, zone := MemberTopology(i)
		if seen[zone] {
			t.Fatalf("zone %s repeats at member %d", zone, i)
		}
		seen[zone] = true
	}
}
