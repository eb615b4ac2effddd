// Command bench is Flotilla's end-to-end benchmark harness (`make bench`).
//
// It starts its own environment with localenv (a host control plane, the
// flotilla controller-manager and M member clusters; apiserver-only members
// by default, so that only the apiservers and the controllers do work), runs
// the scenarios below, prints a table on stdout and writes every number,
// the settings and the machine to a JSON file (--out).
//
//  1. create: N Deployments, each with a ConfigMap it mounts (a follower),
//     are created in the host, selected by one ClusterPropagationPolicy that
//     divides replicas=M over the M members (one replica each). Per workload:
//     time from the host create returning to the Deployment being seen in
//     every member (p50/p95/p99/max); throughput: member objects
//     (Deployments and ConfigMaps) per second from the first host create to
//     the last member object seen.
//  2. ceiling: the same N×M Deployments and N×M ConfigMaps created directly
//     in the members by a plain client, in a fresh namespace per member;
//     reported as objects per second and as the ratio propagation/ceiling.
//  3. status: time from the last of a workload's member pods turning Ready
//     to the host Deployment reporting all replicas ready (p50/p99; the
//     target is p99 under 2 s), and from host create to that (only with
//     --member-mode full: apiserver-only members run no controllers, so
//     there is no status to aggregate; the scenario is then skipped and
//     says so).
//  4. update: the image of all N host Deployments is changed; time until
//     every member copy runs the new image (p50/p99) and throughput.
//  5. paced: once idle, more workloads are created at a steady rate well
//     below the ceiling (--paced-rate, default 20/s, for --paced-duration,
//     default 30 s); per workload, create → present in every member
//     (p50/p99; the target is p99 under 1 s).
//  6. restart: with the controllers idle, the controller-manager is
//     SIGKILLed and started again by `flotilla up` on the same state
//     directory; time until it is idle again and the number of write
//     requests it sent to the members meanwhile (must be 0) and to the host
//     (objects and status; the goal is 0; events are counted apart).
//  7. memory: controller-manager resident memory before any workload
//     (baseline), after the create burst settled and at its peak (VmHWM),
//     RSS per workload above the baseline, and host etcd size per workload.
//
// # Settings
//
// The harness's own clients (host creates and updates, ceiling creates) use
// --client-qps/--client-burst (default 1000/2000, like the controller-
// manager's host client) and --workers goroutines (default 16, like the
// controller-manager's --concurrent-propagation-syncs); the ceiling uses one
// client and --workers goroutines per member. The controller-manager runs
// with the flags localenv gives it (state.json Args) and its defaults
// otherwise: 16 propagation workers (each writes to its clusters in
// parallel), 8 workers for federate, schedule and status, 4 cluster workers,
// host QPS/burst 1000/2000 and member QPS/burst 500/1000 per member. The
// effective values are recorded in the JSON file under settings.
//
// "Idle" means that every controller except the cluster controller (whose
// health probes run on a timer) has an empty work queue, no active worker
// and no reconcile (a delayed requeue) for 3 consecutive seconds.
//
// # Usage
//
//	go run ./test/bench                                  # N=1,000, M=3
//	go run ./test/bench --workloads 10000 --members 10 --timeout 60m
//	go run ./test/bench --member-mode full --skip ceiling,restart
//	go run ./test/bench --profile-dir prof   # then: go tool pprof prof/cpu-create.pprof
//
// Progress goes to stderr. The state directory (a temporary one unless
// --state-dir is given) is removed at the end unless --keep is set; with
// --keep it stays with its logs and data, every process stopped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// Scenario names, as --skip takes them.
const (
	scCreate      = "create"
	scCeiling     = "ceiling"
	scStatus      = "status"
	scUpdate      = "update"
	scRestart     = "restart"
	scMemory      = "memory"
	scPaced       = "paced"
	scenarioNames = "create,status,ceiling,update,paced,memory,restart"
)

// modePull is --member-mode pull: apiserver-only members, every one
// joined in pull mode with a `flotilla agent` process.
const modePull = "pull"

// options are the command-line flags.
type options struct {
	workloads     int
	members       int
	memberMode    string
	clientQPS     float64
	clientBurst   int
	workers       int
	out           string
	stateDir      string
	keep          bool
	flotilla      string
	timeout       time.Duration
	skip          []string
	profileDir    string
	profileSecs   int
	pacedRate     float64
	pacedDuration time.Duration
}

func parseFlags(args []string) (options, error) {
	var o options
	var skip string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.workloads, "workloads", 1000, "number of workloads N (a Deployment and its ConfigMap each)")
	fs.IntVar(&o.members, "members", 3, "number of member clusters M")
	fs.StringVar(&o.memberMode, "member-mode", string(localenv.ModeAPIServerOnly), `member flavour: "apiserver-only", "full" (kwok nodes; enables the status scenario) or "pull" (apiserver-only members joined in pull mode, each with a flotilla agent)`)
	fs.Float64Var(&o.clientQPS, "client-qps", 1000, "QPS of the harness's clients (host writes and the ceiling)")
	fs.IntVar(&o.clientBurst, "client-burst", 2000, "burst of the harness's clients")
	fs.IntVar(&o.workers, "workers", 16, "goroutines writing in parallel (per member for the ceiling)")
	fs.StringVar(&o.out, "out", "bench-results.json", "JSON file to write the results to")
	fs.StringVar(&o.stateDir, "state-dir", "", "state directory of the environment (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the state directory (logs, data) at the end")
	fs.StringVar(&o.flotilla, "flotilla", "", "flotilla binary to use (default: built from ./cmd/flotilla)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "bound on the whole run")
	fs.Float64Var(&o.pacedRate, "paced-rate", 20, "workloads per second of the paced-load scenario")
	fs.DurationVar(&o.pacedDuration, "paced-duration", 30*time.Second, "length of the paced-load scenario")
	fs.StringVar(&o.profileDir, "profile-dir", "", "save controller-manager profiles here: CPU over the first --profile-seconds of each burst and from a restarted process's /readyz, heap after each burst and the restart, goroutine stacks when the update burst stalls")
	fs.IntVar(&o.profileSecs, "profile-seconds", 30, "length of the CPU profiles")
	fs.StringVar(&skip, "skip", "", "comma-separated scenarios to skip ("+scenarioNames+")")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.skip = append(o.skip, s)
		}
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	if o.workloads < 1 {
		errs = append(errs, fmt.Errorf("--workloads must be at least 1, got %d", o.workloads))
	}
	if o.members < 1 || o.members > localenv.MaxMembers {
		errs = append(errs, fmt.Errorf("--members must be between 1 and %d, got %d", localenv.MaxMembers, o.members))
	}
	switch localenv.MemberMode(o.memberMode) {
	case localenv.ModeAPIServerOnly, localenv.ModeFull, modePull:
	default:
		errs = append(errs, fmt.Errorf("--member-mode must be %q, %q or %q, got %q", localenv.ModeAPIServerOnly, localenv.ModeFull, modePull, o.memberMode))
	}
	if o.clientQPS <= 0 || o.clientBurst < 1 {
		errs = append(errs, errors.New("--client-qps must be positive and --client-burst at least 1"))
	}
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.workers))
	}
	if o.pacedRate <= 0 || o.pacedDuration <= 0 {
		errs = append(errs, errors.New("--paced-rate and --paced-duration must be positive"))
	}
	if o.profileSecs < 1 {
		errs = append(errs, fmt.Errorf("--profile-seconds must be at least 1, got %d", o.profileSecs))
	}
	if o.timeout <= 0 {
		errs = append(errs, errors.New("--timeout must be positive"))
	}
	known := strings.Split(scenarioNames, ",")
	for _, s := range o.skip {
		if !slices.Contains(known, s) {
			errs = append(errs, fmt.Errorf("--skip: unknown scenario %q (known: %s)", s, scenarioNames))
		}
	}
	return errors.Join(errs...)
}

// skipped reports whether the user asked to skip a scenario.
func (o options) skipped(name string) bool { return slices.Contains(o.skip, name) }

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	ok, err := run(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: a scenario failed or missed its target (see above)")
		os.Exit(1)
	}
}

// run starts the environment, runs the scenarios, and prints and writes the
// report. It reports false when a scenario failed or missed a target; an
// error means that no report could be produced.
func run(ctx context.Context, opts options) (ok bool, err error) {
	rep := newReport(opts)
	b, err := setUp(ctx, opts)
	if b != nil {
		defer func() { err = errors.Join(err, b.tearDown()) }()
	}
	if err != nil {
		return false, err
	}
	rep.recordEnvironment(b)
	runScenarios(ctx, b, rep)
	rep.finish()
	rep.printTable(os.Stdout)
	if err := rep.writeJSON(opts.out); err != nil {
		return false, err
	}
	logf("results written to %s", opts.out)
	return rep.Passed, nil
}

// runScenarios runs the scenarios in order, each recorded in rep. A failed
// create burst skips the scenarios that need its workloads. Memory is
// reported after the update burst, so that the peak includes both bursts,
// and before the restart replaces the process.
func runScenarios(ctx context.Context, b *bench, rep *report) {
	var cr *createResult
	created := rep.run(scCreate, "create burst", b.skipReason(scCreate, ""), func(s *scenario) error {
		var err error
		cr, err = b.createBurst(ctx, s)
		return err
	})
	needsCreate := ""
	if !created {
		needsCreate = "needs the create burst"
	}
	rep.run(scStatus, "status latency", b.skipReason(scStatus, firstNonEmpty(b.statusUnsupported(), needsCreate)), func(s *scenario) error {
		return b.statusLatency(ctx, s, cr)
	})
	rep.run(scCeiling, "ceiling (direct writes)", b.skipReason(scCeiling, ""), func(s *scenario) error {
		return b.ceiling(ctx, s, cr)
	})
	rep.run(scUpdate, "update burst", b.skipReason(scUpdate, needsCreate), func(s *scenario) error {
		return b.updateBurst(ctx, s, cr)
	})
	rep.run(scPaced, "paced load", b.skipReason(scPaced, needsCreate), func(s *scenario) error {
		return b.paced(ctx, s, cr)
	})
	rep.run(scMemory, "memory", b.skipReason(scMemory, needsCreate), func(s *scenario) error {
		return b.memory(ctx, s, cr)
	})
	rep.run(scRestart, "controller-manager restart", b.skipReason(scRestart, needsCreate), func(s *scenario) error {
		return b.restart(ctx, s)
	})
}

// skipReason says why a scenario does not run: --skip, or why (empty when
// it runs).
func (b *bench) skipReason(name, why string) string {
	if b.opts.skipped(name) {
		return "skipped by --skip"
	}
	return why
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// start is when the harness started; logf prefixes lines with the time since.
var start = time.Now()

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
