package localenv

// This file keeps a machine-wide record of the ports environments chose
// and may not have bound yet, so that two environments starting at the
// same time do not choose the same one.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reserveFor is how long a chosen port stays reserved: longer than an
// environment takes to start the component that binds it. Once bound, the
// port is not free to anyone anyway.
const reserveFor = 10 * time.Minute

// reservationsFile is the record shared by every environment of the
// machine (a variable for tests).
var reservationsFile = filepath.Join(os.TempDir(), "flotilla-reserved-ports")

// withReservations runs choose under an exclusive lock of the record, with
// the ports reserved by others until now; choose returns the ports it
// chose, which are then reserved for reserveFor. When the record cannot be
// used (a symbolic link, another user's file, a read-only directory, no
// lock), choose runs with none reserved: choosing at random below the
// ephemeral range still makes a collision unlikely.
func withReservations(now time.Time, choose func(reserved map[int]bool) ([]int, error)) ([]int, error) {
	// O_NOFOLLOW and the owner check: the record lives in a directory
	// every user can write, and must not lead a write elsewhere.
	f, err := os.OpenFile(reservationsFile, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return choose(nil)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !ownedByUs(st) || !st.Mode().IsRegular() {
		return choose(nil)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return choose(nil)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	until := readReservations(f, now)
	reserved := make(map[int]bool, len(until))
	for p := range until {
		reserved[p] = true
	}
	ports, err := choose(reserved)
	if err != nil {
		return nil, err
	}
	for _, p := range ports {
		until[p] = now.Add(reserveFor)
	}
	if err := writeReservations(f, until); err != nil {
		return nil, fmt.Errorf("record the chosen ports in %s: %w", reservationsFile, err)
	}
	return ports, nil
}

// readReservations reads "port unix-seconds" lines from r, keeping the
// reservations that run past now; lines it cannot read are dropped.
func readReservations(r io.Reader, now time.Time) map[int]time.Time {
	out := map[int]time.Time{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		port, err1 := strconv.Atoi(fields[0])
		until, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || port <= 0 || port > 65535 {
			continue
		}
		if t := time.Unix(until, 0); t.After(now) && t.Before(now.Add(2*reserveFor)) {
			out[port] = t
		}
	}
	return out
}

// writeReservations replaces f's content with until, one line per port in
// port order.
func writeReservations(f *os.File, until map[int]time.Time) error {
	ports := make([]int, 0, len(until))
	for p := range until {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%d %d\n", p, until[p].Unix())
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(b.String()), 0)
	return err
}

// ownedByUs reports whether the file is this process's user's.
func ownedByUs(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}
