package app

import (
	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// DownOptions are the inputs of `flotilla down`.
type DownOptions struct {
	StateDir string
	Purge    bool
	streams  Streams
}

// NewDownCmd returns `flotilla down`.
func NewDownCmd(streams Streams) *cobra.Command {
	o := &DownOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every process of the local environment",
		Long: `Stop every process the environment started (SIGTERM, then SIGKILL after a
grace period). Data, logs and kubeconfigs stay unless --purge is given; a later
up starts a fresh environment either way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return localenv.Down(cmd.Context(), o.StateDir, o.Purge, o.streams.Out)
		},
	}
	addStateDirFlag(cmd.Flags(), &o.StateDir)
	cmd.Flags().BoolVar(&o.Purge, "purge", false, "also remove the environment's state (data, logs, kubeconfigs)")
	return cmd
}
