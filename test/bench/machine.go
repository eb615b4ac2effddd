package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/flotilla-io/flotilla/internal/manager"
)

// machine describes where the benchmark ran.
type machine struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpuModel"`
	MemoryBytes int64  `json:"memoryBytes"`
	OS          string `json:"os"`
}

// settings are the inputs of the run.
type settings struct {
	Workloads   int     `json:"workloads"`
	Members     int     `json:"members"`
	MemberMode  string  `json:"memberMode"`
	ClientQPS   float64 `json:"clientQPS"`
	ClientBurst int     `json:"clientBurst"`
	// Workers is the number of goroutines of the harness's bursts (per
	// member for the ceiling).
	Workers int      `json:"workers"`
	Timeout string   `json:"timeout"`
	Skip    []string `json:"skip,omitempty"`
	// ControllerManager is how the controller-manager ran.
	ControllerManager cmSettings `json:"controllerManager"`
}

// cmSettings are the controller-manager's effective throughput settings:
// its defaults, overridden by the flags the environment started it with.
type cmSettings struct {
	Args                       []string `json:"args"`
	ConcurrentPropagationSyncs int      `json:"concurrentPropagationSyncs"`
	ConcurrentSyncs            int      `json:"concurrentSyncs"`
	ConcurrentClusterSyncs     int      `json:"concurrentClusterSyncs"`
	HostQPS                    float32  `json:"hostQPS"`
	HostBurst                  int      `json:"hostBurst"`
	MemberQPS                  float32  `json:"memberQPS"`
	MemberBurst                int      `json:"memberBurst"`
	LeaderElect                bool     `json:"leaderElect"`
}

func baseSettings(opts options) settings {
	return settings{
		Workloads: opts.workloads, Members: opts.members, MemberMode: opts.memberMode,
		ClientQPS: opts.clientQPS, ClientBurst: opts.clientBurst, Workers: opts.workers,
		Timeout: opts.timeout.String(), Skip: opts.skip,
	}
}

// recordEnvironment adds what the started environment says about itself.
func (r *report) recordEnvironment(b *bench) {
	cm, err := b.controllerManager()
	if err != nil {
		logf("warning: controller-manager settings unknown: %v", err)
		return
	}
	r.Settings.ControllerManager = effectiveCMSettings(cm.Args)
	if r.Revision == "" {
		r.Revision = gitRevision()
	}
}

// effectiveCMSettings applies the recorded controller-manager arguments to
// its defaults.
func effectiveCMSettings(args []string) cmSettings {
	d := manager.DefaultOptions()
	s := cmSettings{
		Args:                       args,
		ConcurrentPropagationSyncs: d.ConcurrentPropagationSyncs,
		ConcurrentSyncs:            d.ConcurrentSyncs,
		ConcurrentClusterSyncs:     d.ConcurrentClusterSyncs,
		HostQPS:                    d.HostQPS,
		HostBurst:                  d.HostBurst,
		MemberQPS:                  d.Cluster.ClientQPS,
		MemberBurst:                d.Cluster.ClientBurst,
		LeaderElect:                d.LeaderElect,
	}
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.IntVar(&s.ConcurrentPropagationSyncs, "concurrent-propagation-syncs", s.ConcurrentPropagationSyncs, "")
	fs.IntVar(&s.ConcurrentSyncs, "concurrent-syncs", s.ConcurrentSyncs, "")
	fs.IntVar(&s.ConcurrentClusterSyncs, "concurrent-cluster-syncs", s.ConcurrentClusterSyncs, "")
	fs.Float32Var(&s.HostQPS, "kube-api-qps", s.HostQPS, "")
	fs.IntVar(&s.HostBurst, "kube-api-burst", s.HostBurst, "")
	fs.Float32Var(&s.MemberQPS, "member-api-qps", s.MemberQPS, "")
	fs.IntVar(&s.MemberBurst, "member-api-burst", s.MemberBurst, "")
	fs.BoolVar(&s.LeaderElect, "leader-elect", s.LeaderElect, "")
	if err := fs.Parse(args); err != nil {
		logf("warning: controller-manager arguments %q: %v", args, err)
	}
	return s
}

// summary is a one-line description for the table's header.
func (c cmSettings) summary() string {
	return fmt.Sprintf("workers propagate %d / federate,schedule,status %d / cluster %d, host QPS %g burst %d, member QPS %g burst %d",
		c.ConcurrentPropagationSyncs, c.ConcurrentSyncs, c.ConcurrentClusterSyncs, c.HostQPS, c.HostBurst, c.MemberQPS, c.MemberBurst)
}

// readMachine describes this machine from /proc.
func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		m.MemoryBytes = kb * 1024
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file with that key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// goVersion is the Go toolchain the harness was built with.
func goVersion() string { return runtime.Version() }

// gitRevision is the repository's HEAD, "+dirty" with local changes; empty
// outside a git checkout.
func gitRevision() string {
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	out := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain").Output(); err == nil && len(st) > 0 {
		out += "+dirty"
	}
	return out
}
