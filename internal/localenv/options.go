package localenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MemberMode says which components a member cluster runs.
type MemberMode string

const (
	// ModeFull runs etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok: Deployments get Running pods on fake nodes.
	ModeFull MemberMode = "full"
	// ModeAPIServerOnly runs etcd and kube-apiserver only, for benchmarks
	// with many clusters where nothing needs to run.
	ModeAPIServerOnly MemberMode = "apiserver-only"
)

// MaxMembers bounds --members: every member costs a few hundred MiB.
const MaxMembers = 64

// Defaults for Options.
const (
	DefaultMembers    = 3
	DefaultNodes      = 3
	DefaultNodeCPU    = "8"
	DefaultNodeMemory = "32Gi"
	DefaultNodePods   = "110"
)

// Options describe an environment to start.
type Options struct {
	// StateDir holds everything the environment owns.
	StateDir string
	// Members is the number of member clusters, named member-1..N.
	Members int
	// MemberMode is the member flavour (default ModeFull).
	MemberMode MemberMode
	// NodesPerMember is the number of kwok nodes per full member.
	NodesPerMember int
	// NodeCPU, NodeMemory and NodePods are each fake node's capacity.
	NodeCPU, NodeMemory, NodePods string
	// NodeLabels are added to every fake node.
	NodeLabels map[string]string
	// Out receives progress lines (default: io.Discard).
	Out io.Writer
	// Detach starts the processes in their own session so that they outlive
	// the caller (flotilla up). Otherwise they are killed when the caller
	// dies (tests).
	Detach bool
	// PullMembers is how many of the members (the last ones) are joined in
	// pull mode, each with a `flotilla agent` process of its own; the rest
	// are push members. It needs Flotilla.
	PullMembers int
	// Flotilla is the path of the flotilla binary. When set, Up also runs
	// `flotilla controller-manager` against the host and joins every member
	// to it; when empty (tests that run controllers in-process) it does
	// neither.
	Flotilla string
}

// DefaultOptions returns the options `flotilla up` starts with.
func DefaultOptions() Options {
	return Options{
		StateDir:       DefaultStateDir(),
		Members:        DefaultMembers,
		MemberMode:     ModeFull,
		NodesPerMember: DefaultNodes,
		NodeCPU:        DefaultNodeCPU,
		NodeMemory:     DefaultNodeMemory,
		NodePods:       DefaultNodePods,
	}
}

// DefaultStateDir is ~/.flotilla, or .flotilla in the working directory when
// the home directory is unknown.
func DefaultStateDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".flotilla")
	}
	return ".flotilla"
}

// Validate checks the options without touching the machine.
func (o *Options) Validate() error {
	var errs []error
	if o.StateDir == "" {
		errs = append(errs, errors.New("--state-dir must not be empty"))
	}
	if o.Members < 0 || o.Members > MaxMembers {
		errs = append(errs, fmt.Errorf("--members must be between 0 and %d, got %d", MaxMembers, o.Members))
	}
	if o.PullMembers < 0 || o.PullMembers > o.Members {
		errs = append(errs, fmt.Errorf("--pull-members must be between 0 and --members (%d), got %d", o.Members, o.PullMembers))
	}
	if o.NodesPerMember < 0 {
		errs = append(errs, fmt.Errorf("--nodes must not be negative, got %d", o.NodesPerMember))
	}
	switch o.MemberMode {
	case ModeFull, ModeAPIServerOnly:
	default:
		errs = append(errs, fmt.Errorf("--member-mode must be %q or %q, got %q", ModeFull, ModeAPIServerOnly, o.MemberMode))
	}
	for flag, v := range map[string]string{"--node-cpu": o.NodeCPU, "--node-memory": o.NodeMemory, "--node-pods": o.NodePods} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a quantity", flag, v))
		} else if q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", flag, v))
		}
	}
	keys := make([]string, 0, len(o.NodeLabels))
	for k := range o.NodeLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node-labels: key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(o.NodeLabels[k]); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--node-labels: value %q: %s", o.NodeLabels[k], strings.Join(msgs, "; ")))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// IsPull reports whether the i-th member (1-based) is a pull member.
func (o *Options) IsPull(i int) bool { return i > o.Members-o.PullMembers }

// MemberName returns the name of the i-th member (1-based).
func MemberName(i int) string { return fmt.Sprintf("member-%d", i) }

// HostName is the name of the host cluster in the environment.
const HostName = "host"

// Topology labels every member carries (on its nodes, and recorded in the
// state for the MemberCluster objects that join them).
const (
	LabelRegion = "topology.kubernetes.io/region"
	LabelZone   = "topology.kubernetes.io/zone"
)

var regions = []string{"us-east", "eu-west", "ap-south", "sa-east"}

// MemberTopology returns the region and zone of the i-th member (1-based):
// members pair up per region, two zones each, so that member-1 and member-2
// share a region and member-3 is elsewhere.
func MemberTopology(i int) (region, zone string) {
	region = regions[((i-1)/2)%len(regions)]
	if cycle := (i - 1) / (2 * len(regions)); cycle > 0 {
		region = fmt.Sprintf("%s-%d", region, cycle+1)
	}
	zone = fmt.Sprintf("%s-%c", region, 'a'+rune((i-1)%2))
	return region, zone
}
