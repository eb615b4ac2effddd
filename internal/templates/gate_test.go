package templates

import (
	"errors"
	"testing"
)

func TestTemplatesWaitForRequiredGates(t *testing.T) {
	c := &Cache{}
	loaded := make(chan struct{})
	c.RequireAlso(loaded)
	if _, err := c.Get(Key{Kind: "ConfigMap", Namespace: "n", Name: "a"}); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Get before the gate opened: %v, want ErrNotSynced", err)
	}
	close(loaded)
	if !c.gatesOpen() || !c.opened.Load() {
		t.Fatal("the gate is closed after its channel was")
	}
}
