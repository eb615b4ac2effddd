// Package memlimit sets the Go runtime's soft memory limit of a
// long-running Flotilla process from its container's memory limit, so that
// the garbage collector works harder before the kernel kills the process
// instead of letting the heap double between collections.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultFraction is the share of the container's memory limit given to
// the Go runtime when no limit is configured: the rest covers memory the
// runtime does not count (stacks of cgo threads, the binary, page cache).
const DefaultFraction = 0.9

// unlimited is the smallest value cgroup v1 reports for "no limit" (the
// largest int64 rounded down to a page).
const unlimited = math.MaxInt64 - 1<<20

// CgroupLimit returns the memory limit of this process's cgroup, read from
// the cgroup file system mounted at root (normally /sys/fs/cgroup) and the
// process's cgroup file (normally /proc/self/cgroup): cgroup v2's
// memory.max or cgroup v1's memory.limit_in_bytes, for the process's own
// cgroup or, inside a container whose cgroup is mounted as the root, for
// the root. It returns 0 when there is no limit or no cgroup file system.
func CgroupLimit(root, procCgroup string) (int64, error) {
	v2Path, v1Path, err := cgroupPaths(procCgroup)
	if err != nil {
		return 0, err
	}
	var candidates []string
	if v2Path != "" {
		candidates = append(candidates, filepath.Join(root, v2Path, "memory.max"), filepath.Join(root, "memory.max"))
	}
	if v1Path != "" {
		candidates = append(candidates, filepath.Join(root, "memory", v1Path, "memory.limit_in_bytes"))
	}
	candidates = append(candidates, filepath.Join(root, "memory", "memory.limit_in_bytes"))
	for _, p := range candidates {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", p, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s (%q): %w", p, s, err)
		}
		if n <= 0 || n >= unlimited {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// cgroupPaths reads the process's cgroup v2 path (line "0::PATH") and
// cgroup v1 memory controller path (line "N:memory:PATH" or a controller
// list containing memory).
func cgroupPaths(procCgroup string) (v2, v1 string, err error) {
	f, err := os.Open(procCgroup)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", procCgroup, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case contains(strings.Split(parts[1], ","), "memory"):
			v1 = parts[2]
		}
	}
	return v2, v1, sc.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Decision is the soft memory limit chosen and why.
type Decision struct {
	// Limit in bytes; 0 leaves the runtime unlimited.
	Limit int64
	// Source says where it came from: "GOMEMLIMIT", "flag", "cgroup" or
	// "none".
	Source string
}

// Decide chooses the limit: GOMEMLIMIT when set (the runtime has applied
// it already), else explicit (a flag, bytes) when positive, else fraction
// of the cgroup limit, else none.
func Decide(envGOMEMLIMIT string, explicit int64, fraction float64, cgroup int64) Decision {
	switch {
	case envGOMEMLIMIT != "":
		return Decision{Limit: debug.SetMemoryLimit(-1), Source: "GOMEMLIMIT"}
	case explicit > 0:
		return Decision{Limit: explicit, Source: "flag"}
	case cgroup > 0 && fraction > 0:
		return Decision{Limit: int64(float64(cgroup) * fraction), Source: "cgroup"}
	}
	return Decision{Source: "none"}
}

// Set applies Decide's choice for this process (reading /proc/self/cgroup
// and /sys/fs/cgroup) and returns it.
func Set(explicit int64, fraction float64) (Decision, error) {
	cg, err := CgroupLimit("/sys/fs/cgroup", "/proc/self/cgroup")
	d := Decide(os.Getenv("GOMEMLIMIT"), explicit, fraction, cg)
	if d.Source == "flag" || d.Source == "cgroup" {
		debug.SetMemoryLimit(d.Limit)
	}
	return d, err
}
