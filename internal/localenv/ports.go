package localenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Listening ports are chosen below the kernel's ephemeral range: a port
// the kernel handed out with ":0" is free only until the component binds
// it, and meanwhile any outgoing connection of any process (the
// environment's own apiservers open many) may take it as its source port.
// Ports below that range are never given to outgoing connections, so the
// only way to lose one is another environment choosing the same port
// before this one's component binds it: the ports chosen are recorded for
// every environment of the machine (reserve.go) and not chosen again until
// they are bound.

// lowestListenPort is the lowest port chosen.
const lowestListenPort = 10000

// ephemeralRange is the file that says where the ephemeral range starts.
const ephemeralRange = "/proc/sys/net/ipv4/ip_local_port_range"

// freePorts returns n distinct loopback ports that were free a moment ago,
// below the ephemeral range when the machine leaves room for them there.
// All listeners stay open until every port is chosen, so none repeats.
func freePorts(n int) ([]int, error) {
	return withReservations(time.Now(), func(reserved map[int]bool) ([]int, error) { return choosePorts(n, reserved) })
}

// choosePorts is freePorts with the ports others reserved left out.
func choosePorts(n int, reserved map[int]bool) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	listen := func(addr string) error {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		// Kept open either way, so that it is not offered again.
		ls = append(ls, l)
		if p := l.Addr().(*net.TCPAddr).Port; !reserved[p] {
			ports = append(ports, p)
		}
		return nil
	}
	if hi, ok := ephemeralStart(); ok && hi-lowestListenPort >= 1000 {
		for tries := 0; len(ports) < n && tries < 20*n; tries++ {
			_ = listen("127.0.0.1:" + strconv.Itoa(lowestListenPort+rand.IntN(hi-lowestListenPort))) // taken: try another
		}
	}
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 100*n {
			return nil, fmt.Errorf("find a free port: every port the kernel offered is reserved by another environment (%s)", reservationsFile)
		}
		if err := listen("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
	}
	return ports, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() (int, bool) {
	b, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	lo, err := strconv.Atoi(fields[0])
	return lo, err == nil
}
