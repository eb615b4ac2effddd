package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/components"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// UpOptions are the inputs of `flotilla up`.
type UpOptions struct {
	Env           localenv.Options
	mode          string
	ComponentsDir string
	streams       Streams
}

// NewUpCmd returns `flotilla up`.
func NewUpCmd(streams Streams) *cobra.Command {
	o := &UpOptions{Env: localenv.DefaultOptions(), streams: streams}
	o.mode = string(o.Env.MemberMode)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local environment: a host control plane and member clusters",
		Long: `Start, in the background, a host control plane (etcd, kube-apiserver and a
kube-controller-manager running only the namespace and garbage-collector
controllers) and N member clusters (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok with fake nodes), then run
"flotilla controller-manager" against the host (it installs the flotilla.io
CRDs), join every member to it as "flotilla join" does, and wait until all
MemberClusters are Ready. With --pull-members N the last N members join as
"flotilla join --mode pull" does instead, each with a "flotilla agent"
process (logs beside the member's) that applies what the host places
there; the host holds no credential for them.

The Kubernetes components are built from the sources pinned in hack/tools on
first use (about 6 minutes on 2 cores) and cached. Running up again on a
running environment changes nothing; if some of its processes died (a killed
apiserver, say), up restarts them with their data.`,
		Example: `  flotilla up
  flotilla up --members 2 --nodes 5 --node-cpu 4 --node-labels tier=gold
  flotilla up --state-dir /tmp/bench --members 10 --member-mode apiserver-only
  flotilla up --members 2 --pull-members 1   # member-1 push, member-2 pull
  kubectl --kubeconfig "$(flotilla kubeconfig member-1)" get nodes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	fs := cmd.Flags()
	addStateDirFlag(fs, &o.Env.StateDir)
	fs.IntVar(&o.Env.Members, "members", o.Env.Members, "number of member clusters (member-1..N)")
	fs.IntVar(&o.Env.PullMembers, "pull-members", o.Env.PullMembers, "how many of the members (the last ones) join in pull mode, each with a `flotilla agent` process that connects out to the host; the others are push members")
	fs.IntVar(&o.Env.NodesPerMember, "nodes", o.Env.NodesPerMember, "fake nodes per member")
	fs.StringVar(&o.mode, "member-mode", o.mode, `member flavour: "full" (scheduler, controllers and kwok nodes) or "apiserver-only" (for benchmarks with many clusters)`)
	fs.StringVar(&o.Env.NodeCPU, "node-cpu", o.Env.NodeCPU, "cpu capacity of each fake node")
	fs.StringVar(&o.Env.NodeMemory, "node-memory", o.Env.NodeMemory, "memory capacity of each fake node")
	fs.StringVar(&o.Env.NodePods, "node-pods", o.Env.NodePods, "pod capacity of each fake node")
	fs.StringToStringVar(&o.Env.NodeLabels, "node-labels", nil, "extra labels for every fake node (k=v,...)")
	fs.StringVar(&o.ComponentsDir, "components-dir", "", "directory of prebuilt component binaries (default: build from hack/tools into the cache; env "+components.EnvComponentsDir+")")
	return cmd
}

// Complete fills derived fields.
func (o *UpOptions) Complete() error {
	o.Env.MemberMode = localenv.MemberMode(o.mode)
	o.Env.Out = o.streams.Out
	o.Env.Detach = true
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate the flotilla binary: %w", err)
	}
	if o.Env.Flotilla, err = filepath.EvalSymlinks(self); err != nil {
		return fmt.Errorf("locate the flotilla binary: %w", err)
	}
	return nil
}

// Validate refuses bad input before anything is built or started.
func (o *UpOptions) Validate() error {
	if err := o.Env.Validate(); err != nil {
		return err
	}
	_, err := localenv.PrepareStateDir(o.Env.StateDir)
	return err
}

// Run builds the components if needed and starts the environment.
func (o *UpOptions) Run(cmd *cobra.Command) error {
	set, err := components.Ensure(cmd.Context(), components.Options{Dir: o.ComponentsDir, Out: o.streams.Out})
	if err != nil {
		return err
	}
	env, err := localenv.Up(cmd.Context(), set, o.Env)
	if errors.Is(err, localenv.ErrAlreadyRunning) {
		st := env.State
		fmt.Fprintf(o.streams.Out, "An environment is already running in %s (host + %d %s member(s)); nothing changed.\n", st.Dir, st.Members, st.MemberMode)
		fmt.Fprintf(o.streams.Out, "Use `flotilla status` to see it, `flotilla down` to stop it.\n")
		return nil
	}
	if err != nil {
		return err
	}
	printAccess(o.streams, env.State)
	return nil
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func printAccess(streams Streams, st *localenv.State) {
	fmt.Fprintf(streams.Out, "\nKubeconfigs (context = cluster name):\n")
	for _, c := range st.Clusters {
		labels := ""
		if len(c.Labels) > 0 {
			labels = fmt.Sprintf("  region=%s zone=%s", c.Labels[localenv.LabelRegion], c.Labels[localenv.LabelZone])
		}
		fmt.Fprintf(streams.Out, "  %-10s %s%s\n", c.Name, c.Kubeconfig, labels)
	}
	fmt.Fprintf(streams.Out, "  %-10s %s\n", "all", st.Dir+"/kubeconfig")
	if gw := localenv.GatewayAdminKubeconfig(st.Dir); fileExists(gw) {
		fmt.Fprintf(streams.Out, "  %-10s %s  (the host through flotilla gateway)\n", "gateway", gw)
	}
	stateFlag := ""
	if st.Dir != localenv.DefaultStateDir() {
		stateFlag = " --state-dir " + st.Dir
	}
	example := localenv.HostName
	if len(st.Clusters) > 1 {
		example = st.Clusters[1].Name
	}
	// Hints use the path the binary was invoked by (./bin/flotilla after
	// make up), so that they work when copied.
	self := "flotilla"
	if len(os.Args) > 0 && strings.Contains(os.Args[0], "/") {
		self = os.Args[0]
	}
	fmt.Fprintf(streams.Out, "\nTry:\n  kubectl --kubeconfig \"$(%[1]s kubeconfig %[2]s%[3]s)\" get nodes\n  %[1]s status%[3]s\n  %[1]s down%[3]s\n",
		self, example, stateFlag)
}
