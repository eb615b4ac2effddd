package app

import (
	"strings"
	"testing"
)

func TestMaintenanceCommands(t *testing.T) {
	root := NewRootCmd(Streams{Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	for _, name := range []string{"cordon", "uncordon", "drain"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("%s is not registered: %v", name, err)
		}
		if err := cmd.Args(cmd, nil); err == nil {
			t.Errorf("%s accepts no argument", name)
		}
		if err := cmd.Args(cmd, []string{"a", "b"}); err == nil {
			t.Errorf("%s accepts two arguments", name)
		}
		hasWait := cmd.Flags().Lookup("wait") != nil && cmd.Flags().Lookup("timeout") != nil
		if hasWait != (name == "drain") {
			t.Errorf("%s: --wait and --timeout present = %v", name, hasWait)
		}
		if cmd.Flags().Lookup("host-kubeconfig") == nil {
			t.Errorf("%s has no --host-kubeconfig", name)
		}
	}
	drain, _, _ := root.Find([]string{"drain"})
	if got := drain.Flags().Lookup("timeout").DefValue; got != "10m0s" {
		t.Errorf("drain --timeout default = %s, want 10m0s", got)
	}
	o := &MaintenanceOptions{Cluster: "m1", action: actionDrain, Wait: true}
	if err := o.Validate(); err == nil {
		t.Error("drain with --timeout 0 is accepted")
	}
	o.Wait = false
	if err := o.Validate(); err != nil {
		t.Errorf("drain --wait=false --timeout 0: %v", err)
	}
}
