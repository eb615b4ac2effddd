package localenv

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestReservedPortsAreNotChosenAgain: environments starting at the same
// time (here, goroutines, each with its own open file and lock) never get
// the same port, although none binds its ports in between, and the record
// keeps only the reservations that have not run out.
func TestReservedPortsAreNotChosenAgain(t *testing.T) {
	useReservations(t)
	const envs, n = 8, 30
	got := make([][]int, envs)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() {
			ports, err := freePorts(n)
			if err != nil {
				t.Error(err)
			}
			got[i] = ports
		})
	}
	wg.Wait()
	seen := map[int]int{}
	for i, ports := range got {
		if len(ports) != n {
			t.Errorf("environment %d: %d ports, want %d", i, len(ports), n)
		}
		for _, p := range ports {
			if j, ok := seen[p]; ok {
				t.Errorf("port %d chosen by environments %d and %d", p, j, i)
			}
			seen[p] = i
		}
	}
	f, err := os.Open(reservationsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held := readReservations(f, time.Now()); len(held) != envs*n {
		t.Errorf("%d ports recorded, want %d", len(held), envs*n)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if held := readReservations(f, time.Now().Add(reserveFor+time.Second)); len(held) != 0 {
		t.Errorf("%d reservations past their time, want none", len(held))
	}
}

func TestReadReservations(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	in := "20001 1800000300\n20002 1799999999\nbad line\n70000 1800000300\n20003 x\n20004 1900000000\n\n20005 1800000001 extra\n20006 1800000001\n"
	got := readReservations(strings.NewReader(in), now)
	want := map[int]bool{20001: true, 20006: true}
	if len(got) != len(want) {
		t.Fatalf("got %v, want ports %v", got, want)
	}
	for p := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("port %d missing from %v", p, got)
		}
	}
}

// TestChoosePortsSkipsReserved: with every port below the ephemeral range
// but a few reserved, no reserved port is chosen; and a second
// environment is told the ports the first one reserved.
func TestChoosePortsSkipsReserved(t *testing.T) {
	start, known := ephemeralStart()
	if !known || start-lowestListenPort < 1000 {
		t.Skip("no room below the ephemeral range on this machine")
	}
	reserved := map[int]bool{}
	for p := lowestListenPort; p < start-20; p++ {
		reserved[p] = true
	}
	ports, err := choosePorts(10, reserved)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if reserved[p] {
			t.Errorf("reserved port %d chosen", p)
		}
	}

	useReservations(t)
	now := time.Now()
	first, err := withReservations(now, func(map[int]bool) ([]int, error) { return []int{20001, 20002}, nil })
	if err != nil {
		t.Fatal(err)
	}
	var told map[int]bool
	if _, err := withReservations(now.Add(time.Minute), func(r map[int]bool) ([]int, error) { told = r; return nil, nil }); err != nil {
		t.Fatal(err)
	}
	for _, p := range first {
		if !told[p] {
			t.Errorf("the second environment was not told of port %d (told %v)", p, told)
		}
	}
}

// useReservations points the record at a file of the test's own until it
// ends.
func useReservations(t *testing.T) {
	old := reservationsFile
	reservationsFile = filepath.Join(t.TempDir(), "reserved")
	t.Cleanup(func() { reservationsFile = old })
}

// TestReservationsDoNotFollowALink: a symbolic link where the record goes
// is not written through; ports are still chosen.
func TestReservationsDoNotFollowALink(t *testing.T) {
	useReservations(t)
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, reservationsFile); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(3)
	if err != nil || len(ports) != 3 {
		t.Fatalf("freePorts(3) = %v, %v", ports, err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target now holds %q (err %v), want it untouched", b, err)
	}
}
