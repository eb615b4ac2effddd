// Package app holds the cobra commands of the flotilla binary. Each verb is a
// NewXCmd constructor building an Options struct with Complete, Validate and
// Run; commands hold no package-level state.
package app

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// Streams are the standard streams a command reads and writes.
type Streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// NewRootCmd returns the flotilla command with every subcommand.
func NewRootCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flotilla",
		Short: "Flotilla federates Kubernetes clusters behind one Kubernetes API",
		Long: `Flotilla is a multi-cluster federation control plane: apply ordinary Kubernetes
objects to one endpoint and Flotilla places them across member clusters, keeps
them in sync and brings their status back.

The local environment (a host control plane and member clusters built from
pinned Kubernetes sources) is managed with up, down, status and kubeconfig.
controller-manager runs the controllers against a host control plane; join
and unjoin add and remove member clusters (join --mode pull registers one
whose agent, flotilla agent, runs in the member and connects out). cordon stops placing objects on a
member, drain also moves its objects away before maintenance, and uncordon
opens it again. rollout approves, resumes or aborts a staged federated
rollout.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		NewUpCmd(streams),
		NewDownCmd(streams),
		NewStatusCmd(streams),
		NewKubeconfigCmd(streams),
		NewComponentsCmd(streams),
		NewControllerManagerCmd(streams),
		NewAgentCmd(streams),
		NewGatewayCmd(streams),
		NewJoinCmd(streams),
		NewUnjoinCmd(streams),
		NewAcceptCmd(streams),
		NewCordonCmd(streams),
		NewDrainCmd(streams),
		NewUncordonCmd(streams),
		NewRolloutCmd(streams),
	)
	return cmd
}

// addStateDirFlag registers --state-dir, shared by the environment verbs.
func addStateDirFlag(fs *pflag.FlagSet, dir *string) {
	fs.StringVar(dir, "state-dir", localenv.DefaultStateDir(), "directory holding the environment's kubeconfigs, logs, pids and data")
}
