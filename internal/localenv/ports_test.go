package localenv

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsBelowTheEphemeralRange(t *testing.T) {
	const n = 40
	ports, err := freePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != n {
		t.Fatalf("%d ports, want %d", len(ports), n)
	}
	start, known := ephemeralStart()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		if known && start-lowestListenPort >= 1000 && (p < lowestListenPort || p >= start) {
			t.Errorf("port %d outside [%d, %d): an outgoing connection could take it", p, lowestListenPort, start)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}
